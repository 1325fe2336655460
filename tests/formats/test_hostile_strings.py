"""Hostile strings (from token strings, tensor names, allowlist reasons, paths) through every format.

Each renderer must escape for its medium: the JSON and SARIF are strict JSON (NaN/Infinity become null),
the JUnit is well-formed XML, no line of the GitHub output is a workflow command we did not write, no
format shows a control, bidi, zero-width or separator character (each is written visibly, ``\\u202e``),
the Markdown holds no link, image, HTML or mention made of report text, and the plots draw ``$...$``
labels literally.
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
from hf_vocab_audit.errors import one_line, printable
from hf_vocab_audit.formats import github, html, json_format, junit, markdown, plots, sarif, text

from .markdown_ast import live, strings_of, table_rows

NASTY = ["\n::error title=x::owned", "::stop-commands::pwn", "\r\n::warning::x", "\x1b[2J\x1b]0;t\x07", "\x00",
         "\ufffe", "\ud800", "\u202e", "\u2028", "$\\frac{a}{$", "%0A::error::", "<![CDATA[", "]]>", "&lt;", "`|`",
         "\u2066", "\u2069", "\u200b", "\u200f", "\ufeff", "\u061c", "\u2029", "\x85", "@everyone", "![x](http://e/x.png)",
         "[a](https://evil.example)", "<img src=x onerror=alert(1)>", "https://evil.example", "```", "``", "\\"]
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
    shown = [text.render(report, color=False), markdown.render(report), github.render(report), html.render(report)]
    shown += strings_of(json.loads(sarif.render(report)))  # what a code-scanning page displays
    shown += [t for el in ET.fromstring(junit.render(report).encode("utf-8")).iter()
              for t in (el.text or "", *el.attrib.values())]  # what a test-results page displays
    for out in shown:  # no control, format (bidi, zero-width), separator or surrogate character reaches a reader
        bad = {ch for ch in out if ch not in "\n\t" and unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zl", "Zp")}
        assert not bad, bad
    md = markdown.render(report)
    assert live(md) == []  # no link, image, raw HTML, code block or mention made of report text
    assert table_rows(md)[: len(report.findings)] == [5] * len(report.findings)



@pytest.mark.parametrize("ch", ["\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068",
                                "\u2069", "\u200b", "\u200c", "\u200d", "\u200e", "\u200f", "\u2028", "\u2029",
                                "\ufeff", "\u061c", "\x1b", "\x85"])
def test_hidden_characters_are_written_visibly(ch):
    """Bidi overrides and isolates, zero-width and other format characters, line separators and controls are
    escaped the same way everywhere: the error line, the text, GitHub, SARIF and JUnit reports."""
    escaped = repr(ch)[1:-1]
    assert escaped.startswith("\\") and len(escaped) > 1
    name = f"model{ch}.safetensors"
    assert one_line(f"{name}: bad header") == f"model{escaped}.safetensors: bad header"
    assert printable(name) == f"model{escaped}.safetensors"
    f = Finding("HVA101", "vocab-exceeds-embeddings", Severity.ERROR, f"token {name}", Location(file=name, tensor=name))
    report = Report(target="m", tool_version="0", findings=(f,))
    assert f"token model{escaped}.safetensors" in text.render(report, color=False)
    assert f"token model{escaped}.safetensors" in github.render(report)
    assert f"token model{escaped}.safetensors" in markdown.render(report)
    result = json.loads(sarif.render(report))["runs"][0]["results"][0]
    assert result["message"]["text"] == f"token model{escaped}.safetensors"
    assert result["locations"][0]["logicalLocations"][0]["name"] == f"model{escaped}.safetensors"
    assert ch not in junit.render(report) and escaped in junit.render(report)


def test_cli_error_line_escapes_a_bidi_file_name(tmp_path, run_cli):
    """The one-line error on stderr names a file whose name reverses the line, with the override escaped."""
    folder = tmp_path / "model\u202egnp.exe"
    folder.mkdir()
    (folder / "config.json").write_text("{", encoding="utf-8")
    code, out, err = run_cli("check", folder)
    assert code == 2 and out == ""
    assert "model\\u202egnp.exe" in err and "\u202e" not in err
    assert len(err.strip().splitlines()) == 1


def test_html_shows_bidi_text_visibly(monkeypatch):
    """HTML page, notebook fragment and the notebook fallback: a token string with a right-to-left override
    (and a zero-width space) is written as ``\\u202e`` (``\\u200b``) text, so it cannot reorder the text around
    it; the choice over isolating it in ``<bdi>``, which would still show the token itself reversed."""
    from hf_vocab_audit.core.display import DISPLAY

    token = "<|im_end|>\u202e\u200bexe.txt"
    f = Finding("HVA101", "vocab-exceeds-embeddings", Severity.ERROR, f"token {token!s} has no row",
                Location(file="tokenizer.json", token=token), hint=f"remove `{token}`")
    report = Report(target=f"models/{token}", tool_version="0", findings=(f,))
    with_fallback = dict(DISPLAY)
    with_fallback.pop("html", None)
    outputs = [html.render(report), html.fragment(report), report._repr_html_()]
    monkeypatch.setattr("hf_vocab_audit.core.report.DISPLAY", with_fallback)
    outputs.append(report._repr_html_())  # without the renderers: the <pre> summary
    assert outputs[-1].startswith("<pre>")
    for out in outputs:
        assert "\u202e" not in out and "\u200b" not in out
        assert "&lt;|im_end|&gt;\\u202e\\u200bexe.txt" in out


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
