"""Rule selectors are validated where they are parsed, in the library as on the command line."""

from __future__ import annotations

import pytest
from builders import checkpoint

from hf_vocab_audit import AuditError, audit
from hf_vocab_audit.rules import selected


def test_unknown_code_is_an_error_naming_it(tmp_path):
    with pytest.raises(AuditError, match="HVA999"):
        audit(tmp_path / "never-read", select=["HVA999"])
    with pytest.raises(AuditError, match="no-such-rule"):
        selected(ignore=["HVA1", "no-such-rule"])


@pytest.mark.parametrize("option", ["select", "ignore"])
def test_a_bare_string_is_refused(tmp_path, option):
    with pytest.raises(TypeError, match="not the string 'HVA101'"):
        audit(tmp_path, **{option: "HVA101"})


def test_codes_prefixes_and_names_select(tmp_path):
    assert [r.code for r in selected(["HVA101"])] == ["HVA101"]
    assert [r.code for r in selected(["token-id-beyond-embedding"])] == ["HVA101"]
    assert {r.code[:4] for r in selected(["HVA1"])} == {"HVA1"}
    assert "HVA101" not in {r.code for r in selected(["all"], ["HVA101"])}
    folder = checkpoint(tmp_path / "m", "llama", 104)
    assert audit(folder, select=["HVA101"]).rules_run == ("HVA101",)


def test_a_skipped_rule_names_its_code(tmp_path):
    """Skipped work says which rule did not run (``Skipped.rule``), not a string to split."""
    folder = checkpoint(tmp_path / "m", "llama", 104)  # no chat template: HVA205/HVA206 cannot run
    report = audit(folder, select=["HVA205"])
    assert report.rules_run == ()
    assert [(s.rule, s.to_dict()["rule"]) for s in report.skipped] == [("HVA205", "HVA205")]
    assert report.skipped[0].reason == "the tokenizer has no chat template"
