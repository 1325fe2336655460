"""One outcome: every format states the verdict the process exits with (issue 13).

Each scenario runs `check` once, writing every format; each format's verdict must match the exit status.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import pytest
from builders import checkpoint, edit_json

from hf_vocab_audit.demo import build_demo_checkpoint

FORMATS = ("text", "json", "markdown", "sarif", "junit", "github", "html")


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("outcome")
    error = build_demo_checkpoint(root / "error")
    warning = checkpoint(root / "warning", "llama", 104)
    edit_json(warning / "config.json", eos_token_id=3)  # HVA202 warning only
    allowed = build_demo_checkpoint(root / "allowed")
    return {"error": error, "warning": warning, "allowed": allowed}


def every_format(run_cli, tmp_path, folder, *flags):
    """One ``check`` writing every format to its own file: (exit code, stderr, {format: output})."""
    args = ["check", folder, *flags]
    files = {}
    for fmt in FORMATS:
        files[fmt] = tmp_path / f"report.{fmt}"
        args += ["--format", fmt, "--output-file", files[fmt]]
    code, _, err = run_cli(*args)
    return code, err, {fmt: path.read_text(encoding="utf-8") if path.exists() else "" for fmt, path in files.items()}


def allow_everything(run_cli, folder):
    _, out, _ = run_cli("check", folder, "--format", "json", "--exit-zero")
    codes = sorted({f["code"] for f in json.loads(out)["findings"]})
    entries = "".join(f'[[allow]]\ncode = "{c}"\nreason = "accepted for the outcome test"\n\n' for c in codes)
    (folder.parent / "allowed.toml").write_text(entries, encoding="utf-8")  # the operator's file (--config)


def verdicts(outputs: dict[str, str]) -> dict[str, int]:
    """What each format says the exit status is (1 = the gate fails)."""
    sarif = json.loads(outputs["sarif"])["runs"][0]["invocations"][0]
    suite = ET.fromstring(outputs["junit"].split("\n", 1)[1])
    data = json.loads(outputs["json"])
    assert data["verdict"] == ("FAIL" if data["exit_code"] else "PASS")
    return {
        "text": int(outputs["text"].strip().splitlines()[-1].startswith("FAIL")),
        "json": data["exit_code"],
        "markdown": int(outputs["markdown"].startswith("## ❌ hf-vocab-audit FAIL")),
        "sarif": sarif["exitCode"],
        "junit": int(int(suite.get("failures", "0")) > 0),
        "github": int(": FAIL:" in outputs["github"].strip().splitlines()[-1]),
        "html": int(re.search(r'id="verdict">(FAIL|PASS)<', outputs["html"]).group(1) == "FAIL"),
    }


@pytest.mark.parametrize("model, flags, expected", [
    ("error", [], 1),
    ("error", ["--exit-zero"], 0),
    ("error", ["--fail-on", "never"], 0),
    ("warning", [], 0),
    ("warning", ["--fail-on", "warning"], 1),
    ("warning", ["--fail-on", "warning", "--exit-zero"], 0),
    ("allowed", [], 0),
    ("allowed", ["--fail-on", "info"], 0),
])
def test_every_format_agrees_with_the_exit_status(models, run_cli, tmp_path, model, flags, expected):
    if model == "allowed":
        if not (models[model].parent / "allowed.toml").exists():
            allow_everything(run_cli, models[model])
        flags = ["--config", models[model].parent / "allowed.toml", *flags]
    code, err, outputs = every_format(run_cli, tmp_path, models[model], *flags)
    assert code == expected, err
    assert verdicts(outputs) == dict.fromkeys(FORMATS, code)
    data = json.loads(outputs["json"])
    assert data["exit_zero"] == ("--exit-zero" in flags)
    if model == "allowed":
        assert data["summary"]["allowed"] >= 1 and data["failing"] == 0


def test_a_failing_source_is_recorded_and_the_audit_goes_on(models, run_cli, tmp_path, monkeypatch):
    """Report.errors, modelscan-style: the weights analysis fails, the static findings are still reported,
    every format says ERROR and the process exits 2."""
    from hf_vocab_audit import AuditError, audit
    from hf_vocab_audit.weights import analysis

    def unreadable(facts):
        raise AuditError(facts.model_dir / "model.safetensors", "cannot map tensor 'embed_tokens.weight'")

    monkeypatch.setattr(analysis, "gather_weights", unreadable)
    report = audit(models["error"], weights=True)
    assert len(report.errors) == 1 and "cannot map tensor" in report.errors[0]
    assert any(f.code == "HVA101" for f in report.findings)
    assert {s.rule for s in report.skipped if s.rule} >= {"HVA601", "HVA602"}
    assert report.verdict().verdict == "ERROR" and report.exit_code() == 2

    args = ["check", models["error"], "--weights", "--exit-zero"]
    files = {}
    for fmt in FORMATS:
        files[fmt] = tmp_path / f"report.{fmt}"
        args += ["--format", fmt, "--output-file", files[fmt]]
    code, _, _ = run_cli(*args)
    assert code == 2
    outputs = {fmt: path.read_text(encoding="utf-8") for fmt, path in files.items()}
    data = json.loads(outputs["json"])
    assert data["verdict"] == "ERROR" and data["exit_code"] == 2 and data["errors"]
    assert json.loads(outputs["sarif"])["runs"][0]["invocations"][0]["exitCode"] == 2
    assert outputs["text"].strip().splitlines()[-1].startswith("ERROR")
    assert 'id="verdict">ERROR<' in outputs["html"] and "hf-vocab-audit ERROR" in outputs["markdown"]


def words(outputs: dict[str, str]) -> dict[str, str]:
    """The verdict word each format states (PASS, PARTIAL, FAIL or ERROR)."""
    sarif = json.loads(outputs["sarif"])["runs"][0]["invocations"][0]["properties"]["verdict"]
    suite = ET.fromstring(outputs["junit"].split("\n", 1)[1])
    junit = next(p.get("value") for p in suite.iter("property") if p.get("name") == "verdict")
    return {
        "text": outputs["text"].strip().splitlines()[-1].split()[0],
        "json": json.loads(outputs["json"])["verdict"],
        "markdown": outputs["markdown"].split()[3].rstrip(":"),
        "sarif": sarif,
        "junit": junit,
        "github": outputs["github"].strip().splitlines()[-1].split(": ")[1],
        "html": re.search(r'id="verdict">([A-Z]+)<', outputs["html"]).group(1),
    }


@pytest.mark.parametrize("flags, expected, word", [([], 2, "ERROR"), (["--allow-partial"], 0, "PARTIAL")])
def test_every_format_states_a_partial_audit(run_cli, tmp_path, flags, expected, word):
    """No weights: the rules that need them did not run. Failing closed, or PARTIAL when accepted; never PASS."""
    folder = checkpoint(tmp_path / "m", "llama", 104)
    (folder / "model.safetensors").unlink()
    code, err, outputs = every_format(run_cli, tmp_path, folder, *flags)
    assert code == expected, err
    assert words(outputs) == dict.fromkeys(FORMATS, word)
    suite = ET.fromstring(outputs["junit"].split("\n", 1)[1])
    assert (int(suite.get("errors", "0")) > 0) == (code == 2)
    assert json.loads(outputs["sarif"])["runs"][0]["invocations"][0]["exitCode"] == code
