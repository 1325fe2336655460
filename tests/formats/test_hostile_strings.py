"""Hostile strings (from token strings, tensor names, allowlist reasons, paths) through every format.

Each renderer must escape for its medium: the JSON and SARIF are strict JSON (NaN/Infinity become null),
the JUnit is well-formed XML, no line of the GitHub output is a workflow command we did not write, the
text and Markdown carry no control characters, and the plots draw ``$...$`` labels literally.
"""

from __future__ import annotations

import json
import re
import unicodedata
import xml.etree.ElementTree as ET

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from hf_vocab_audit.core.findings import Finding, Location, Severity, Skipped
from hf_vocab_audit.core.report import Report
from hf_vocab_audit.formats import github, json_format, junit, markdown, plots, sarif, text

NASTY = ["\n::error title=x::owned", "::stop-commands::pwn", "\r\n::warning::x", "\x1b[2J\x1b]0;t\x07", "\x00",
         "\ufffe", "\ud800", "\u202e", "\u2028", "$\\frac{a}{$", "%0A::error::", "<![CDATA[", "]]>", "&lt;", "`|`"]
hostile = st.lists(st.one_of(st.sampled_from(NASTY), st.text(max_size=8)), max_size=5).map("".join)
numbers = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-(2**70), 2**70))
COMMAND = re.compile(r"^::(error|warning|notice) (file=[^,:]*,(line=\d+,)?)?title=[^:,]*::[^\n]*$")


def _report(s: list[str], nums: list[float | int]) -> Report:
    findings = tuple(
        Finding(code="HVA101", name="vocab-exceeds-embeddings", severity=sev, message=s[i],
                location=Location(file=s[i + 1] or None, tensor=s[i + 2], token=s[i + 3], token_id=3),
                hint=s[i + 4], details={"values": nums, "name": s[i + 5]},
                allowed=s[i + 6] if allowed else None)
        for i, (sev, allowed) in enumerate(((Severity.ERROR, False), (Severity.WARNING, True), (Severity.INFO, False)))
    )
    return Report(target=s[0], tool_version="0", findings=findings, skipped=(Skipped(s[1], s[2]),), errors=(s[3],),
                  facts={"tokenizer_length": 8, "tokenizer_max_id": 7, "model_type": s[4]},
                  extra={"weights": {"median_norm": nums[-1] if nums else float("nan")}})


def _strict(constant: str) -> None:
    raise AssertionError(f"{constant} is not JSON")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(hostile, min_size=10, max_size=10), st.lists(numbers, max_size=4))
@example(["/", "", "", "\ud800", "", "", "", "", "", ""], [])  # an absolute target, a lone surrogate in a file name
def test_every_format_escapes_for_its_medium(strings, nums):
    report = _report(strings, nums)
    for rendered in (json_format.render(report), sarif.render(report)):
        json.loads(rendered, parse_constant=_strict)  # NaN/Infinity would raise
    ET.fromstring(junit.render(report).encode("utf-8"))  # well-formed XML 1.0
    lines = github.render(report).splitlines()
    assert len(lines) == len(report.active()) + 1 + len(report.errors) + 1  # annotations, allowed, errors, summary
    for line in lines:
        assert not line.startswith("::") or COMMAND.match(line) or line.startswith("::error title=hf-vocab-audit::")
        assert "\r" not in line
    for out in (text.render(report, color=False), markdown.render(report)):
        bad = {ch for ch in out if ch != "\n" and unicodedata.category(ch) in ("Cc", "Cs", "Zl", "Zp")}
        assert not bad, bad


@pytest.mark.skipif(not plots.available(), reason="matplotlib not installed")
@given(st.lists(st.one_of(st.sampled_from(["$", "$x$", "$\\frac{", "\\", "^_", "$$"]), st.text(max_size=4)),
                min_size=1, max_size=4).map("".join))
@settings(max_examples=30, deadline=None)
def test_plots_draw_mathtext_literally(label):
    """A column or split named ``$\\frac{a}{$`` used to raise ValueError inside matplotlib's mathtext."""
    entry = {"split": label, "column": label, "limit": 4, "edges": [0, 2, 4, 6], "counts": [1, 2, 3]}
    out = plots.dataset_plots({"id_columns": [entry], "lengths": [entry],
                               "label_counts": [{"split": label, "column": label, "num_labels": 2,
                                                 "counts": {label: 3, "1": 2}}]})
    assert len(out) == 3
