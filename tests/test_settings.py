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
    assert (s.fail_on, s.ignore, s.exit_zero) == ("warning", ("HVA206",), False)
    write(project / "src" / "hf-vocab-audit.toml", 'fail-on = "info"\nexit-zero = true\n')
    s = load_settings(model)
    assert (s.fail_on, s.ignore, s.exit_zero) == ("info", ("HVA206",), True)
    s = load_settings(model, overrides={"fail_on": "error", "ignore": ["HVA1"], "exit_zero": None})
    assert (s.fail_on, s.ignore, s.exit_zero) == ("error", ("HVA1",), True)
    assert [p.rsplit("/", 1)[-1] for p in s.sources] == ["pyproject.toml", "hf-vocab-audit.toml"]
    assert s.ignored == ()


def test_pyproject_without_the_table_is_passed_over(project, tmp_path):
    write(project / "pyproject.toml", '[tool.hf-vocab-audit]\nfail-on = "never"\n')
    write(project / "src" / "pyproject.toml", '[project]\nname = "x"\n')
    assert load_settings(None).fail_on == "never"


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
