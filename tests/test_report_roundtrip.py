"""Reports round-trip: ``Report.from_dict(report.to_dict()) == report``, and a report read back from its JSON
renders every format exactly as the original, so every renderer works from the data alone. Every JSON a
scenario writes is valid against ``reports/schema/report.schema.json``, whose top level admits no key it
does not describe: a section added to the report but not to the schema fails here."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import pytest
from builders import CHATML, checkpoint, edit_json
from dataset_builders import write_jsonl

import hf_vocab_audit as hva
from hf_vocab_audit.audit import audit_gguf
from hf_vocab_audit.core.report import SECTIONS, Report
from hf_vocab_audit.core.sections import DatasetSection, VllmSection, WeightsSection
from hf_vocab_audit.demo import build_demo_checkpoint
from hf_vocab_audit.formats import RENDERERS, render, text
from hf_vocab_audit.gate import run_gate

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((ROOT / "reports" / "schema" / "report.schema.json").read_text())
GOLDEN = ROOT / "reports" / "formats"
# The formats ``check`` writes, and the golden files' extensions (scripts/regenerate_formats.py)
FORMATS = ("text", "json", "markdown", "sarif", "junit", "github", "html")
EXTENSIONS = {"text": "txt", "json": "json", "markdown": "md", "sarif": "sarif", "junit": "junit.xml",
              "github": "github.txt", "html": "html"}


def validate(data, schema=SCHEMA):
    jsonschema.Draft202012Validator(schema).validate(data)


def rendered(report, fmt):
    """What ``check --output-file`` writes for ``fmt`` (text without colour)."""
    return text.render(report, color=False) if fmt == "text" else render(report, fmt)


@pytest.fixture(scope="module")
def scenarios(tmp_path_factory):
    root = tmp_path_factory.mktemp("roundtrip")
    demo = build_demo_checkpoint(root / "demo")
    healthy = checkpoint(root / "healthy", "llama", 104)
    partial = checkpoint(root / "partial", "llama", 104)
    (partial / "model.safetensors").unlink()
    cls = checkpoint(root / "cls", "bert-cls", 104, model={"num_labels": 3})
    data = write_jsonl(root / "d.jsonl", [{"text": "w1 w2", "label": v} for v in (1, 2, 3, 1)])
    many = write_jsonl(root / "many.jsonl", [{"text": "w1", "label": f"v{i}"} for i in range(3)])
    chat = checkpoint(root / "chat", "llama", 104, added_special=["<|im_start|>", "<|im_end|>"], chat_template=CHATML)
    messages = write_jsonl(root / "c.jsonl", [{"messages": [{"role": "user", "content": "w1"},
                                                            {"role": "assistant", "content": "w2"}]}] * 3)
    out = {
        "broken": run_gate(str(demo)).report,
        "exit-zero": run_gate(str(demo), exit_zero=True).report,
        "healthy": run_gate(str(healthy)).report,
        "partial": run_gate(str(partial), allow_partial=True).report,
        "not-examined": run_gate(str(partial)).report,
        "labels": run_gate(str(cls), datasets=[str(data), str(many)], formats=["html"]).report,
        "chat": run_gate(str(chat), datasets=[str(messages)], show_mask=2).report,  # with the loss preview
        "fixed": run_gate(str(demo), fix=True, output=root / "fixed").report,
        "unjudged": hva.audit(demo),
        "weights-vllm": run_gate(str(demo), weights=True, target_kind="vllm").report,
        "vllm": run_gate(str(healthy), target_kind="vllm").report,
    }
    try:
        from gguf_builders import write_gguf
    except ImportError:  # the gguf extra is not installed: that one scenario is left out
        return out
    gguf = write_gguf(root / "m.gguf")
    out["gguf-source"] = audit_gguf(gguf, source=healthy).judged()
    return out


NAMES = ["broken", "exit-zero", "healthy", "partial", "not-examined", "labels", "chat", "fixed", "unjudged",
         "weights-vllm", "vllm", "gguf-source"]


def scenario(scenarios, name):
    if name not in scenarios:
        pytest.skip(f"{name}: needs the gguf extra")
    return scenarios[name]


@pytest.mark.parametrize("name", NAMES)
def test_from_dict_of_to_dict_is_the_report(scenarios, name):
    report = scenario(scenarios, name)
    back = Report.from_dict(report.to_dict())
    if report.outcome is None:  # an unjudged report states the default gate's verdict
        report = report.judged()
    assert back == report


@pytest.mark.parametrize("name", NAMES)
def test_a_report_read_from_its_json_renders_every_format_the_same(scenarios, name):
    report = scenario(scenarios, name)
    back = Report.from_dict(json.loads(render(report, "json")))
    for fmt in RENDERERS:
        assert render(back, fmt) == render(report, fmt), fmt


@pytest.mark.parametrize("name", NAMES)
def test_every_scenario_json_is_valid_against_the_schema(scenarios, name):
    validate(json.loads(render(scenario(scenarios, name), "json")))


def test_the_sections_are_typed_and_the_scenarios_cover_each(scenarios):
    """Renderers read typed fields: each optional section is a frozen type on the report, never a dict in
    ``extra``; and the scenarios above carry every section (else the schema tests would not test it)."""
    seen: set[str] = set()
    for report in scenarios.values():
        assert report.extra == {}
        seen |= set(report.to_dict())
    assert isinstance(scenarios["labels"].dataset, DatasetSection)
    assert isinstance(scenarios["weights-vllm"].weights, WeightsSection)
    assert isinstance(scenarios["weights-vllm"].vllm, VllmSection)
    assert scenarios["weights-vllm"].vllm.untrained_reserved_ids is not None  # the --weights form of the section
    column = scenarios["labels"].dataset.split("train").columns["label"]
    assert column.labels is not None and column.id_histogram is None  # labels listed; no ids to plot
    wanted = {"fix"} | SECTIONS - ({"gguf_source"} if "gguf-source" not in scenarios else set())
    assert wanted <= seen


@pytest.mark.parametrize("section", sorted(SECTIONS | {"fix"}))
def test_a_section_missing_from_the_schema_fails_validation(scenarios, section):
    """Each section is described by the schema, and the schema admits nothing it does not describe."""
    report = next((r for r in scenarios.values() if section in r.to_dict()), None)
    if report is None:
        pytest.skip(f"{section}: no scenario carries it here (the gguf extra is not installed)")
    data = json.loads(render(report, "json"))
    assert section in SCHEMA["properties"]
    validate(data)
    trimmed = copy.deepcopy(SCHEMA)
    del trimmed["properties"][section]
    with pytest.raises(jsonschema.ValidationError):
        validate(data, trimmed)


def test_the_schema_refuses_a_malformed_section(scenarios):
    data = json.loads(render(scenarios["labels"], "json"))
    data["dataset"]["splits"][0]["columns"]["label"]["unique_values"][0]["count"] = "many"
    with pytest.raises(jsonschema.ValidationError):
        validate(data)
    data = json.loads(render(scenarios["weights-vllm"], "json"))
    data["weights"]["sides"]["input"]["surprise"] = 1
    with pytest.raises(jsonschema.ValidationError):
        validate(data)


# ---- the scenarios of tests/test_outcome.py, through the command line -------------------------------

@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("outcome")
    error = build_demo_checkpoint(root / "error")
    warning = checkpoint(root / "warning", "llama", 104)
    edit_json(warning / "config.json", eos_token_id=3)  # HVA202 warning only
    allowed = build_demo_checkpoint(root / "allowed")
    (root / "allowed.toml").write_text("".join(  # the operator's allowlist (--config)
        f'[[allow]]\ncode = "{c}"\nreason = "accepted for the round-trip test"\n\n'
        for c in sorted({f.code for f in hva.audit(allowed).findings})), encoding="utf-8")
    partial = checkpoint(root / "partial", "llama", 104)
    (partial / "model.safetensors").unlink()
    return {"error": error, "warning": warning, "allowed": allowed, "partial": partial}


def every_format(run_cli, tmp_path, folder, *flags):
    """One ``check`` writing every format to its own file: (exit code, {format: output})."""
    args = ["check", folder, *flags]
    files = {}
    for fmt in FORMATS:
        files[fmt] = tmp_path / f"report.{fmt}"
        args += ["--format", fmt, "--output-file", files[fmt]]
    code, _, _ = run_cli(*args)
    return code, {fmt: path.read_text(encoding="utf-8") for fmt, path in files.items()}


def assert_round_trips(outputs):
    """The JSON is valid, reads back to a report that writes the same JSON, and that report renders every
    other format byte for byte as ``check`` wrote it."""
    data = json.loads(outputs["json"])
    validate(data)
    back = Report.from_dict(data)
    assert back.to_dict() == data
    for fmt in FORMATS:
        assert rendered(back, fmt) == outputs[fmt], fmt


@pytest.mark.parametrize("model, flags", [
    ("error", []),
    ("error", ["--exit-zero"]),
    ("error", ["--fail-on", "never"]),
    ("warning", []),
    ("warning", ["--fail-on", "warning"]),
    ("warning", ["--fail-on", "warning", "--exit-zero"]),
    ("allowed", []),
    ("allowed", ["--fail-on", "info"]),
    ("partial", []),
    ("partial", ["--allow-partial"]),
    ("error", ["--weights", "--target", "vllm"]),
])
def test_every_outcome_scenario_round_trips(models, run_cli, tmp_path, model, flags):
    if model == "allowed":
        flags = ["--config", models[model].parent / "allowed.toml", *flags]
    _code, outputs = every_format(run_cli, tmp_path, models[model], *flags)
    assert_round_trips(outputs)


def test_a_failing_source_round_trips(models, run_cli, tmp_path, monkeypatch):
    """test_outcome's ERROR scenario: the weights analysis fails, the static findings are still reported."""
    from hf_vocab_audit import AuditError
    from hf_vocab_audit.weights import analysis

    def unreadable(facts):
        raise AuditError(facts.model_dir / "model.safetensors", "cannot map tensor 'embed_tokens.weight'")

    monkeypatch.setattr(analysis, "gather_weights", unreadable)
    code, outputs = every_format(run_cli, tmp_path, models["error"], "--weights", "--exit-zero")
    assert code == 2 and json.loads(outputs["json"])["verdict"] == "ERROR"
    assert_round_trips(outputs)


def test_the_golden_reports_round_trip():
    """scripts/regenerate_formats.py's scenario: the committed golden JSON reads back to a report that renders
    every committed golden file byte for byte."""
    outputs = {fmt: (GOLDEN / f"broken.{ext}").read_text(encoding="utf-8") for fmt, ext in EXTENSIONS.items()}
    assert_round_trips(outputs)
