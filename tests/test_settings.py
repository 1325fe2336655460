"""Settings files: pyproject.toml [tool.hf-vocab-audit], the working directory's hf-vocab-audit.toml or
--config, flags win; the model's own hf-vocab-audit.toml may only make the gate stricter (HVA003 says the rest)."""

from __future__ import annotations

import pytest

from hf_vocab_audit.demo import build_demo_checkpoint
from hf_vocab_audit.errors import AuditError
from hf_vocab_audit.gate import run_gate
from hf_vocab_audit.settings import load_settings


@pytest.fixture()
def project(tmp_path, monkeypatch):
    """A project root with models/broken (the demo checkpoint) and cwd in a sub-folder of it."""
    build_demo_checkpoint(tmp_path / "models" / "broken")
    (tmp_path / "src").mkdir()
    monkeypatch.chdir(tmp_path / "src")
    return tmp_path


def write(path, text):
    path.write_text(text)
    return path


def test_pyproject_found_upward_then_the_working_directorys_file_then_flags(project):
    write(project / "pyproject.toml", '[tool.hf-vocab-audit]\nfail-on = "warning"\nignore = ["HVA206"]\n')
    model = project / "models" / "broken"
    s = load_settings(model)
    assert (s.values.get("fail_on"), s.values.get("ignore"), s.values.get("exit_zero")) == ("warning", ("HVA206",), False)
    write(project / "src" / "hf-vocab-audit.toml", 'fail-on = "info"\nexit-zero = true\n')
    s = load_settings(model)
    assert (s.values.get("fail_on"), s.values.get("ignore"), s.values.get("exit_zero")) == ("info", ("HVA206",), True)
    s = load_settings(model, overrides={"fail_on": "error", "ignore": ["HVA1"], "exit_zero": None})
    assert (s.values.get("fail_on"), s.values.get("ignore"), s.values.get("exit_zero")) == ("error", ("HVA1",), True)
    assert [p.rsplit("/", 1)[-1] for p in s.sources] == ["pyproject.toml", "hf-vocab-audit.toml"]
    assert s.ignored == ()


def test_pyproject_without_the_table_is_passed_over(project, tmp_path):
    write(project / "pyproject.toml", '[tool.hf-vocab-audit]\nfail-on = "never"\n')
    write(project / "src" / "pyproject.toml", '[project]\nname = "x"\n')
    assert load_settings(None).values.get("fail_on") == "never"


def test_settings_change_the_audit(project):
    write(project / "pyproject.toml", '[tool.hf-vocab-audit]\nselect = ["HVA2"]\n')
    outcome = run_gate("../models/broken")
    assert {f.code for f in outcome.report.findings} == {"HVA201", "HVA202", "HVA206"}
    assert outcome.exit_code == 1


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('fail_on = "error"\n', "unknown key 'fail_on'"),
        ('select = ["HVA999"]\n', "select: unknown rule code or name 'HVA999'"),
        ('ignore = "HVA101"\n', "ignore: must be a list of rule codes, prefixes or names, not a string (write ['HVA101'])"),
        ('fail-on = "fatal"\n', "fail-on: must be one of error, warning, info, never"),
        ("exit-zero = 1\n", "exit-zero: must be true or false"),
        ('[[allow]]\ncode = "HVA202"\n', "allow[0].reason"),
        ('[[allow]]\ncode = "HVA998"\nreason = "x"\n', "allow[0].code: unknown rule code or name 'HVA998'"),
        ('[[allow]]\ncode = "HVA202"\nreason = "x"\nline = 3\n', "allow[0]: unknown key 'line'"),
        ("select = [\n", "is not valid TOML"),
    ],
)
def test_bad_settings_name_the_key(project, text, message):
    path = write(project / "src" / "hf-vocab-audit.toml", text)
    with pytest.raises(AuditError) as exc:
        load_settings(project / "models" / "broken")
    assert message in str(exc.value) and str(path) in str(exc.value)


def test_allowlist_only_in_the_settings_file(project):
    write(project / "pyproject.toml", '[tool.hf-vocab-audit]\n[[tool.hf-vocab-audit.allow]]\ncode = "HVA202"\n')
    with pytest.raises(AuditError, match="allow: the allowlist goes in hf-vocab-audit.toml in the working directory"):
        load_settings(None)


def test_bad_settings_exit_2_naming_the_key(project, run_cli):
    write(project / "pyproject.toml", '[tool.hf-vocab-audit]\nfailon = "error"\n')
    code, _, err = run_cli("check", "../models/broken")
    assert code == 2
    assert "pyproject.toml: unknown key [tool.hf-vocab-audit] 'failon'" in err


def test_allowlist_accepts_matching_findings_with_reason(project):
    model = project / "models" / "broken"
    write(project / "src" / "hf-vocab-audit.toml", """
[[allow]]
code = "chat-template-token-out-of-range"
token = "<|im_end|>"
reason = "the template is replaced at serving time"

[[allow]]
code = "HVA101"
tensor = "no.such.tensor"
reason = "stale"
""")
    outcome = run_gate(str(model))
    allowed = [f for f in outcome.report.findings if f.allowed]
    assert [(f.code, f.location.token, f.allowed) for f in allowed] == [
        ("HVA206", "<|im_end|>", "the template is replaced at serving time")]
    assert outcome.report.counts()["allowed"] == 1 and outcome.report.counts()["error"] == 4
    assert [e.where for e in outcome.unused_allow] == ["hf-vocab-audit.toml allow[1]"]


def test_allowing_every_failing_finding_passes_the_gate(project, run_cli):
    model = project / "models" / "broken"
    write(project / "src" / "hf-vocab-audit.toml", "".join(
        f'[[allow]]\ncode = "{c}"\nreason = "accepted for the test"\n' for c in ("HVA101", "HVA102", "HVA201", "HVA206")))
    code, out, err = run_cli("check", str(model))
    assert code == 0, out + err
    assert "allowed: accepted for the test" in out and "PASS 0 error(s), 1 warning(s), 0 info, 5 allowed" in out


# ---- the target's own settings: stricter only (issue: a gate the artifact cannot talk out of its verdict) ----


def _json(out):
    import json

    return json.loads(out)


@pytest.fixture()
def warning_only(tmp_path):
    """A checkpoint whose only finding is a warning (HVA202: config.json's eos is not the tokenizer's)."""
    from builders import checkpoint, edit_json

    model = checkpoint(tmp_path / "warning", "llama", 104)
    edit_json(model / "config.json", eos_token_id=3)
    return model


def test_a_stricter_fail_on_in_the_target_is_obeyed(warning_only, run_cli):
    assert run_cli("check", warning_only)[0] == 0
    write(warning_only / "hf-vocab-audit.toml", 'fail-on = "warning"\n')
    code, out, _ = run_cli("check", warning_only, "--format", "json")
    assert code == 1 and [f["code"] for f in _json(out)["findings"]] == ["HVA202"]  # obeyed: nothing reported
    assert run_cli("check", warning_only, "--fail-on", "error")[0] == 0  # the operator's flag still wins


def test_a_target_fail_on_is_obeyed_only_where_it_is_stricter_than_the_operators(project):
    model = project / "models" / "broken"
    write(project / "pyproject.toml", '[tool.hf-vocab-audit]\nfail-on = "warning"\n')
    write(model / "hf-vocab-audit.toml", 'fail-on = "info"\n')
    assert (load_settings(model).values.get("fail_on"), load_settings(model).ignored) == ("info", ())
    write(model / "hf-vocab-audit.toml", 'fail-on = "warning"\n')
    assert (load_settings(model).values.get("fail_on"), load_settings(model).ignored) == ("warning", ())
    for laxer in ("error", "never"):
        write(model / "hf-vocab-audit.toml", f'fail-on = "{laxer}"\n')
        s = load_settings(model)
        assert s.values.get("fail_on") == "warning" and [(i.file, i.keys) for i in s.ignored] == [("hf-vocab-audit.toml", ("fail-on",))]
    write(model / "hf-vocab-audit.toml", 'fail-on = "fatal"\n')  # a key that is obeyed is checked: exit 2
    with pytest.raises(AuditError, match="fail-on: must be one of"):
        load_settings(model)


def test_relaxing_keys_in_the_target_are_reported_naming_the_file_and_keys(project, run_cli):
    model = project / "models" / "broken"
    write(model / "hf-vocab-audit.toml", 'exit-zero = true\nselect = ["HVA002"]\nmax-rows = 1\nengine = "ray"\n'
                                         '[[allow]]\ncode = "HVA101"\nreason = "x"\n')
    code, out, err = run_cli("check", model, "--format", "json")
    assert code == 1, err
    report = _json(out)
    (hva003,) = [f for f in report["findings"] if f["code"] == "HVA003"]
    assert hva003["severity"] == "warning" and hva003["location"]["file"] == "hf-vocab-audit.toml"
    assert hva003["details"]["keys"] == ["exit-zero", "select", "max-rows", "engine", "allow"]
    assert "hf-vocab-audit.toml" in hva003["message"] and "exit-zero, select, max-rows, engine, allow" in hva003["message"]
    assert not any(f.get("allowed") for f in report["findings"]) and "HVA101" in {f["code"] for f in report["findings"]}
    settings = load_settings(model)
    assert not set(settings.values) & {"exit_zero", "select", "max_rows", "engine"} and settings.allow == ()
    code, out, _ = run_cli("check", model)  # every format says it: the text report too
    assert "HVA003 target-settings-ignored" in out
    assert run_cli("explain", "HVA003")[1].startswith("HVA003 target-settings-ignored (warning)")


def test_hva003_is_quiet_without_a_settings_file_and_with_one_that_only_tightens(project, warning_only):
    from hf_vocab_audit import audit

    assert "HVA003" not in {f.code for f in run_gate(str(warning_only)).report.findings}
    write(warning_only / "hf-vocab-audit.toml", 'fail-on = "info"\nextend-unsafe-fixes = ["HVA202"]\n')
    assert "HVA003" not in {f.code for f in run_gate(str(warning_only)).report.findings}
    assert "HVA003" not in {f.code for f in audit(warning_only).findings}


def test_config_replaces_the_targets_file_and_may_relax_the_gate(project, run_cli):
    model = project / "models" / "broken"
    write(model / "hf-vocab-audit.toml", 'fail-on = "info"\n')  # not read under --config
    trusted = write(project / "trusted.toml", 'exit-zero = true\n[[allow]]\ncode = "HVA206"\nreason = "ok"\n')
    code, out, _ = run_cli("check", model, "--config", trusted, "--format", "json")
    report = _json(out)
    assert code == 0 and report["exit_zero"] and report["fail_on"] == "error"
    assert "HVA003" not in {f["code"] for f in report["findings"]}
    assert {f["code"] for f in report["findings"] if f.get("allowed")} == {"HVA206"}


def test_a_pyproject_inside_the_target_is_the_targets_when_the_gate_runs_inside_it(project, monkeypatch):
    """Run from inside the checkpoint (or a pre-commit hook on a model repository), its pyproject.toml is
    found first: it is still the checkpoint's, and the operator's above it still applies."""
    model = project / "models" / "broken"
    write(project / "pyproject.toml", '[tool.hf-vocab-audit]\nignore = ["HVA206"]\n')
    write(model / "pyproject.toml", '[tool.hf-vocab-audit]\nexit-zero = true\nfail-on = "warning"\n')
    (model / "sub").mkdir()
    monkeypatch.chdir(model / "sub")
    s = load_settings(model)
    assert (s.values.get("ignore"), s.values.get("exit_zero"), s.values.get("fail_on")) == (("HVA206",), False, "warning")
    assert [(i.file, i.keys) for i in s.ignored] == [("pyproject.toml", ("exit-zero",))]
    outcome = run_gate(str(model))
    assert outcome.exit_code == 1 and "HVA003" in {f.code for f in outcome.report.findings}
    monkeypatch.chdir(project / "src")  # from outside the checkpoint its pyproject is not a settings file
    assert load_settings(model).ignored == () and load_settings(model).values.get("fail_on") == "error"


@pytest.mark.parametrize("holds", ["config", "pyproject", "operator file"])
def test_fix_force_refuses_an_output_that_holds_a_file_the_run_reads(project, run_cli, monkeypatch, holds):
    model = project / "models" / "broken"
    out = project / "out"
    out.mkdir()
    (out / "old.txt").write_text("x")
    args = []
    if holds == "config":
        kept = write(out / "gate.toml", 'fail-on = "error"\n')
        args = ["--config", kept]
    elif holds == "pyproject":
        kept = write(out / "pyproject.toml", '[tool.hf-vocab-audit]\nfail-on = "error"\n')
        monkeypatch.chdir(out)
    else:
        kept = write(out / "hf-vocab-audit.toml", 'fail-on = "error"\n')
        monkeypatch.chdir(out)
    code, stdout, err = run_cli("check", model, "--fix", "--output", out, "--force", *args)
    assert code == 2 and stdout == ""
    assert len(err.splitlines()) == 1 and "--force would delete it" in err and str(kept.resolve()) in err
    assert kept.is_file() and (out / "old.txt").is_file()  # nothing was deleted
    assert not (project / "models" / "broken-fixed").exists()


def test_a_report_is_never_written_over_the_settings_file_in_use(project, run_cli):
    config = write(project / "gate.toml", 'fail-on = "error"\n')
    code, _, err = run_cli("check", project / "models" / "broken", "--config", config, "--format", "json",
                           "--output-file", config)
    assert code == 2 and "lands inside the input" in err
    assert config.read_text() == 'fail-on = "error"\n'
