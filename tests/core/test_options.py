"""Typed options: one table of check's options, settable in the settings files, clashes refused before any read."""

from __future__ import annotations

import ast
import builtins
import json
import os
import pathlib

import pytest
import typer

from hf_vocab_audit import cli
from hf_vocab_audit.core.options import OPTIONS, FixOptions, GateOptions, Method, build_gate_options
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


def test_every_check_option_has_a_settings_key():
    """Each flag of `check` but --config (which names the settings file) is a key of OPTIONS."""
    command = typer.main.get_command(cli.app).commands["check"]  # type: ignore[attr-defined]
    flags = {opt[2:] for p in command.params for opt in p.opts if opt.startswith("--")}
    assert flags - {"config"} == {o.key for o in OPTIONS}


def test_the_cli_keeps_no_copy_of_core_enums_or_exit_codes():
    """Its choices and exit codes are core's own objects, not a second definition that could drift."""
    tree = ast.parse(pathlib.Path(cli.__file__).read_text(encoding="utf-8"))
    classes = [n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
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
    options = build_gate_options({})
    assert options == GateOptions() and options.audit.scan is None and options.fix is None
    options = build_gate_options({"datasets": ["d"], "formats": ["html"], "max_length": 8, "fix": None})
    assert options.audit.scan is not None and options.audit.scan.histograms
    assert dict(options.audit.scan.chat_flags)["max_length"] == 8
    with pytest.raises(AuditError, match="--batch-size must be >= 1"):
        build_gate_options({"datasets": ["d"], "batch_size": 0})


def test_what_a_flag_needs_may_come_from_the_settings(project):
    """--suppress-ids-file needs --target vllm: the settings file may give it; without it, refused."""
    (project / "pyproject.toml").write_text('[tool.hf-vocab-audit]\ntarget = "vllm"\n')
    outcome = run_gate("models/broken", suppress_ids_file=project / "ids.json")
    assert outcome.options.output.suppress_ids_file == project / "ids.json"
    assert "suppress_token_ids" in outcome.report.to_dict()["vllm"]
    (project / "pyproject.toml").write_text('[tool.hf-vocab-audit]\nweights = false\n')
    with pytest.raises(AuditError, match="--suppress-ids-file needs --target vllm"):
        run_gate("models/broken", suppress_ids_file=project / "ids.json")
