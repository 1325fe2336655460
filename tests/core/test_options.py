"""Typed options: one declaration per option of check, settable in the settings files, clashes refused before any read."""

from __future__ import annotations

import ast
import builtins
import inspect
import json
import os
import pathlib

import pytest
import typer

from hf_vocab_audit import cli
from hf_vocab_audit.core.options import OPTIONS, AuditOptions, FixOptions, GateOptions, Method, OptionValues, build_gate_options
from hf_vocab_audit.demo import build_demo_checkpoint
from hf_vocab_audit.errors import AuditError
from hf_vocab_audit.gate import run_gate
from hf_vocab_audit.settings import load_settings


@pytest.fixture()
def project(tmp_path, monkeypatch):
    """A project root (cwd) with models/broken, the demo checkpoint."""
    build_demo_checkpoint(tmp_path / "models" / "broken")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture()
def no_reads(monkeypatch):
    """Opening any file fails the test: what is refused must be refused before anything is read."""
    def refuse(*args, **kwargs):
        raise AssertionError(f"a file was opened: {args[:1]}")

    for owner, name in ((builtins, "open"), (os, "open"), (pathlib.Path, "open"), (pathlib.Path, "read_bytes"),
                        (pathlib.Path, "read_text")):
        monkeypatch.setattr(owner, name, refuse)


ROOT = pathlib.Path(__file__).resolve().parents[2]
FLAGS = [o for o in OPTIONS if o.flag]
SETTABLE = [o for o in OPTIONS if o.settable]


def test_every_declared_option_appears_once_in_the_cli_the_settings_and_the_reference(tmp_path):
    """Each declaration gives exactly one flag of `check` (with its help, panel and --no- pair), one settings
    key that the validation takes, one entry of the command reference and one row of the settings table."""
    command = typer.main.get_command(cli.app).commands["check"]  # type: ignore[attr-defined]
    params = [p for p in command.params if p.param_type_name == "option"]
    assert sorted(opt for p in params for opt in p.opts) == sorted(f"--{o.key}" for o in FLAGS)
    for option in FLAGS:
        (param,) = [p for p in params if p.opts == [f"--{option.key}"]]
        assert (param.help, param.rich_help_panel) == (option.help, option.panel)  # type: ignore[attr-defined]
        assert param.secondary_opts == ([f"--no-{option.key}"] if option.negatable else [])
        assert param.multiple == option.kind.many
    (project := tmp_path / "p").mkdir()
    (project / "gate.toml").write_text("no-such-key = 1\n")
    with pytest.raises(AuditError, match="unknown key") as info:
        load_settings(None, config=project / "gate.toml")
    known = str(info.value).split("(known: ", 1)[1].rstrip(")").split(", ")
    assert known == [o.key for o in SETTABLE] + ["allow"]
    reference = (ROOT / "cli" / "reference.md").read_text(encoding="utf-8")
    section = reference.split("## `hf-vocab-audit check`", 1)[1].split("\n## ", 1)[0]
    entries = [line.split("`")[1].split(" ")[0].split("/")[0] for line in section.splitlines()
               if line.startswith("* `--") and not line.startswith("* `--help")]
    assert sorted(entries) == sorted(f"--{o.key}" for o in FLAGS)
    table = (ROOT / "docs" / "ci-gate.md").read_text(encoding="utf-8").split("<!-- settings:start", 1)[1].split("<!-- settings:end", 1)[0]
    rows = [line.split("`")[1] for line in table.splitlines() if line.startswith("| `")]
    assert rows == [o.key for o in SETTABLE]


def test_no_option_is_declared_anywhere_else():
    """The command's parameters, the settings, the gate and the library call hold no copy of an option: a
    new option is one declaration (core.options.OPTIONS), not five edits that can drift."""
    from hf_vocab_audit.audit import audit
    from hf_vocab_audit.core import options as options_module
    from hf_vocab_audit.gate import run_gate as gate
    from hf_vocab_audit.settings import Settings

    tree = ast.parse(pathlib.Path(cli.__file__).read_text(encoding="utf-8"))
    (check,) = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "check"]
    assert [a.arg for a in check.args.args] == ["target"] and check.args.kwarg is not None
    others = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in ("rules_cmd", "repro", "demo")]
    theirs = {id(n) for command in others for n in ast.walk(command)}  # (rules --format, repro --weights: theirs)
    strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
               and id(n) not in theirs}
    assert not strings & {f"--{o.key}" for o in FLAGS}
    attrs = {o.attr for o in OPTIONS}
    settings_only = {o.attr for o in OPTIONS if not o.flag}  # the fix reads these from Settings, their one home
    assert not (set(Settings.__dataclass_fields__) & attrs) - settings_only
    assert not set(inspect.signature(audit).parameters) & attrs
    assert not set(inspect.signature(gate).parameters) & attrs
    assert not {"fail_on", "exit_zero", "allow_partial"} - set(GateOptions.__dataclass_fields__)  # read by the gate
    assert not hasattr(options_module, "ATTRS") and not hasattr(options_module, "POSITIVE")


def test_the_keyword_forms_go_through_the_declarations(project):
    from hf_vocab_audit import audit

    with pytest.raises(TypeError, match="unexpected keyword argument 'fix'"):
        audit("models/broken", fix=True)  # an option of the gate, not of the audit
    with pytest.raises(TypeError, match="unknown option 'max_row'"):
        run_gate("models/broken", max_row=3)
    outcome = run_gate("models/broken", fail_on="warning", exit_zero=True)
    verdict = outcome.report.verdict()
    assert (verdict.fail_on, verdict.exit_zero, outcome.exit_code) == (outcome.options.fail_on, True, 0)
    assert audit("models/broken", select=["HVA1"]).rules_run == audit(
        "models/broken", options=AuditOptions(select=("HVA1",))).rules_run


def test_the_cli_keeps_no_copy_of_core_enums_or_exit_codes():
    """Its choices and exit codes are core's own objects, not a second definition that could drift."""
    tree = ast.parse(pathlib.Path(cli.__file__).read_text(encoding="utf-8"))
    classes = [n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)  # an enum or a constant holder
               and any(ast.unparse(b) in ("str", "int", "enum.Enum", "Enum", "IntEnum", "enum.IntEnum") for b in n.bases)]
    assigned = [t.id for n in ast.walk(tree) if isinstance(n, ast.Assign) for t in n.targets
                if isinstance(t, ast.Name) and t.id.startswith("EXIT_")]
    assert classes == [] and assigned == []


@pytest.mark.parametrize(("flags", "message"), [
    (["--fix", "--dataset", "d.jsonl"], "--dataset cannot be combined with --fix"),
    (["--suppress-ids-file", "ids.json"], "--suppress-ids-file needs --target vllm"),
    (["--source", "hf", "--weights"], "--weights apply to a transformers checkpoint folder"),
    (["--source", "hf", "--dataset", "d.jsonl", "--target", "gguf"], "--dataset, --target apply to a transformers"),
])
def test_a_clash_is_refused_before_the_target_is_looked_at(run_cli, tmp_path, flags, message):
    code, _, err = run_cli("check", tmp_path / "no-such-model", *flags)
    assert code == 2 and message in err and err.count("\n") == 1


def test_a_clash_opens_no_file(project, no_reads):
    with pytest.raises(AuditError, match="--dataset cannot be combined with --fix"):
        run_gate("models/broken", fix=True, datasets=["data.jsonl"])


def test_options_a_kind_of_target_cannot_take_are_refused_before_it_is_read(project, no_reads):
    with pytest.raises(AuditError, match="--fix needs a local checkpoint folder, not a Hub id"):
        run_gate("org/model", fix=True)
    with pytest.raises(AuditError, match="need a local checkpoint folder"):
        run_gate("org/model", weights=True)


def test_a_gguf_target_with_weights_is_refused_before_it_is_read(project, monkeypatch):
    gguf = project / "m.gguf"
    gguf.write_bytes(b"GGUF")
    from hf_vocab_audit.facts.sources import gguf as gguf_facts

    monkeypatch.setattr(gguf_facts, "read_gguf_facts", lambda *_: pytest.fail("the GGUF was read"))
    with pytest.raises(AuditError, match="a GGUF is checked from its metadata only"):
        run_gate(str(gguf), weights=True)


def test_a_scan_option_from_pyproject_and_the_flag_that_wins(project):
    rows = [{"text": "hello", "label": 0}] * 5
    (project / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (project / "pyproject.toml").write_text('[tool.hf-vocab-audit]\ndataset = ["data.jsonl"]\nmax-rows = 2\n'
                                            'allow-partial = true\n')
    outcome = run_gate("models/broken")
    (split,) = outcome.report.to_dict()["dataset"]["splits"]
    assert split["rows"] == 2 and outcome.options.audit.scan is not None
    assert outcome.options.audit.scan.specs == (str(project / "data.jsonl"),)  # read from the file's folder
    outcome = run_gate("models/broken", max_rows=3)
    assert outcome.report.to_dict()["dataset"]["splits"][0]["rows"] == 3


def test_fix_options_from_a_config_file(project, tmp_path):
    config = project / "audit.toml"
    config.write_text('fix = true\noutput = "fixed"\nmethod = "surgical"\npad-to-multiple-of = 8\n')
    outcome = run_gate("models/broken", config=config)
    assert outcome.options.fix == FixOptions(output=project / "fixed", pad_to_multiple_of=8, method=Method.SURGICAL)
    assert (project / "fixed" / "config.json").is_file()


TARGET_FILE_KEYS = [
    ('output = "/somewhere"\n', "output", "max-rows = 0\n", "max-rows: must be a whole number >= 1"),
    ('dataset = ["../x.jsonl"]\n', "dataset", 'format = ["pdf"]\n', "format: must be one of text, json"),
    ("force = true\n", "force", 'engine-name = "ray"\n', "unknown key 'engine-name'"),
]


@pytest.mark.parametrize(("text", "key", "bad", "message"), TARGET_FILE_KEYS)
def test_a_checkpoint_file_naming_paths_or_writes_is_not_obeyed_and_bad_operator_keys_fail(
        project, text, key, bad, message):
    model = project / "models" / "broken"
    (model / "hf-vocab-audit.toml").write_text(text + bad)
    settings = load_settings(model)  # the target's keys are read, not obeyed, not even checked
    assert [(i.file, i.keys) for i in settings.ignored] == [("hf-vocab-audit.toml", (key, bad.split(" ")[0]))]
    assert not set(settings.values) & {"output", "datasets", "force", "max_rows", "formats"}
    (project / "gate.toml").write_text(bad)
    with pytest.raises(AuditError, match=message) as info:
        load_settings(model, config=project / "gate.toml")  # the operator's file: a bad key is refused
    assert "gate.toml" in str(info.value)


def test_library_keywords_and_defaults():
    options = build_gate_options(OptionValues())
    assert options == GateOptions() and options.audit.scan is None and options.fix is None
    options = build_gate_options(OptionValues({"datasets": ["d"], "formats": ["html"], "max_length": 8, "fix": None}))
    assert options.audit.scan is not None and options.audit.scan.histograms
    assert dict(options.audit.scan.chat_flags)["max_length"] == 8
    with pytest.raises(AuditError, match="--batch-size must be >= 1"):
        build_gate_options(OptionValues({"datasets": ["d"], "batch_size": 0}))
    with pytest.raises(TypeError, match="unknown option 'max_row'"):  # a misspelt keyword is not dropped
        OptionValues({"max_row": 3})


def test_what_a_flag_needs_may_come_from_the_settings(project):
    """--suppress-ids-file needs --target vllm: the settings file may give it; without it, refused."""
    (project / "pyproject.toml").write_text('[tool.hf-vocab-audit]\ntarget = "vllm"\n')
    outcome = run_gate("models/broken", suppress_ids_file=project / "ids.json")
    assert outcome.options.output.suppress_ids_file == project / "ids.json"
    assert "suppress_token_ids" in outcome.report.to_dict()["vllm"]
    (project / "pyproject.toml").write_text('[tool.hf-vocab-audit]\nweights = false\n')
    with pytest.raises(AuditError, match="--suppress-ids-file needs --target vllm"):
        run_gate("models/broken", suppress_ids_file=project / "ids.json")


def test_audit_keywords_type_every_keyword_of_audit_by_its_kind():
    """Editors and mypy check ``audit(weigths=True)`` through ``AuditKeywords``: it holds exactly the keywords
    ``audit()`` takes, each typed as its option's kind is written (a bool, an int, a path, a list...)."""
    from hf_vocab_audit.core.options import AUDIT_KEYWORDS, OPTIONS, AuditKeywords, Kind

    hints = AuditKeywords.__annotations__
    assert set(hints) == set(AUDIT_KEYWORDS)
    spelled = {Kind.BOOL: "bool |", Kind.INT: "int |", Kind.STR: "str |", Kind.PATH: "os.PathLike[str]",
               Kind.RULES: "Iterable[str]", Kind.STRS: "Iterable[str]", Kind.SPECS: "Iterable[Any]"}
    for option in OPTIONS:
        if option.attr not in hints:
            continue
        hint = getattr(hints[option.attr], "__forward_arg__", hints[option.attr])  # the annotation as written
        assert hint.endswith("| None"), option.attr  # None: not given, as everywhere else
        expected = option.choices.__name__ if option.kind is Kind.CHOICE else spelled[option.kind]
        assert expected in hint, (option.attr, hint)
