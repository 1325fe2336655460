"""JUnit XML read back with junitparser: one case per rule, failures only at/above --fail-on."""

from __future__ import annotations

from junitparser import Failure, JUnitXml, Skipped

from hf_vocab_audit.formats import junit


def parse(tmp_path, text: str):
    path = tmp_path / "report.xml"
    path.write_text(text)
    return next(iter(JUnitXml.fromfile(str(path))))


def cases(suite) -> dict[str, list]:
    return {case.name.split()[0]: list(case.result) for case in suite}


def test_one_case_per_rule_and_failures_for_errors(broken_report, tmp_path):
    suite = parse(tmp_path, junit.render(broken_report.judged("error")))
    by_code = cases(suite)
    assert sorted(by_code) == sorted(broken_report.rules_run)
    failing = sorted(code for code, results in by_code.items() if any(isinstance(r, Failure) for r in results))
    assert failing == ["HVA101", "HVA102", "HVA201", "HVA206"]
    assert suite.failures == 4 and suite.tests == len(broken_report.rules_run)
    hva206 = next(r for r in by_code["HVA206"] if isinstance(r, Failure))
    assert "(and 1 more)" in hva206.message
    assert "259 embedding rows" in hva206.text


def test_fail_on_decides_what_fails(broken_report, tmp_path):
    warn = cases(parse(tmp_path, junit.render(broken_report.judged("warning"))))
    assert any(isinstance(r, Failure) for r in warn["HVA202"])
    never = parse(tmp_path, junit.render(broken_report.judged("never")))
    assert never.failures == 0


def test_skipped_rules_are_skipped_cases(tmp_path):
    from builders import make_model

    from hf_vocab_audit import audit

    report = audit(make_model(tmp_path / "m", "llama", 100))  # no tokenizer: tokenizer rules skip
    suite = parse(tmp_path, junit.render(report))
    skipped = {case.name.split()[0]: r.message for case in suite for r in case.result if isinstance(r, Skipped)}
    assert "HVA101" in skipped and "no tokenizer files" in skipped["HVA101"]
    assert suite.skipped == len(skipped) > 0 and suite.failures == 0
