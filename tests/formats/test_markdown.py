"""Markdown PR comment: verdict line, one table row per finding, collapsible details, safe escaping."""

from __future__ import annotations

import dataclasses

from hf_vocab_audit.core.findings import Finding, Location, Severity
from hf_vocab_audit.formats import markdown


def test_summary_table_and_details(broken_report):
    text = markdown.render(broken_report)
    assert text.startswith("## ❌ hf-vocab-audit FAIL: `models/broken`")
    assert "**5 error(s), 1 warning(s), 0 info** (fail-on `error`)" in text
    rows = [line for line in text.splitlines() if line.startswith("| ") and "`HVA" in line]
    assert len(rows) == len(broken_report.findings)
    assert all(row.count(" | ") == 4 for row in rows)  # pipes inside cells are escaped
    assert text.count("<details><summary>HVA") == len(broken_report.findings)
    assert "model.resize_token_embeddings(len(tokenizer))" in text


def test_pass_and_report_text_in_code_spans(broken_report):
    f = Finding("HVA203", "pad-is-eos", Severity.INFO, "pad <s> equals eos | a & b", Location(file="x.json"))
    report = dataclasses.replace(broken_report, findings=(f,))
    text = markdown.render(report.judged("error"))
    assert "✅ hf-vocab-audit PASS" in text
    # In a code span <s> is text (outside one it would strike through); the pipe is escaped for the table.
    assert "| `pad <s> equals eos \\| a & b` |" in text
