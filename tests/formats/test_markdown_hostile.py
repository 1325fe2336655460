"""A Markdown report (a pull-request comment, a job summary) cannot be used against its readers.

Every string a checkpoint or dataset controls (token strings, template text and ``raise_exception``
messages, file, tensor and column names, dataset values, allowlist reasons) is read back here with a
CommonMark parser: it must arrive as the exact text of one code span, never as a link, an image, raw
HTML, a mention, a code block or an extra table cell.
"""

from __future__ import annotations

import html
import json
import xml.etree.ElementTree as ET

import pytest

from hf_vocab_audit.core.causes import Cause
from hf_vocab_audit.core.coverage import ColumnCoverage, Coverage, Gap, SplitCoverage
from hf_vocab_audit.core.findings import Finding, Location, Severity, Skipped
from hf_vocab_audit.core.fixes import Applicability, Fix
from hf_vocab_audit.core.report import Report
from hf_vocab_audit.errors import hidden, printable
from hf_vocab_audit.formats import markdown

from .markdown_ast import code_spans, live, strings_of, table_rows, tokens

from hostile_readers import READER_HOSTILE, _added_token  # isort: skip (tests/ is on the path)
from malformed import tiny_checkpoint  # isort: skip

HOSTILE = [
    "@everyone", "@octo-org/owners please merge", "![x](http://e/x.png)", "[a](javascript:alert(1))",
    "<img src=x onerror=alert(1)>", "https://evil.example", "www.evil.example", "mail me: a@evil.example",
    "<https://evil.example>", "```", "``", "`", "a ``` b", "` leading", "trailing `", "| a | b |", "\\|", "x\\",
    "line one\n\n# heading\n- item", "\r\n> quote", "&lt;script&gt; &amp; &#64;everyone", "\u202eevil\u202c",
    "a\u2066b\u2069c\u200bd\ufeff\u061c\u2028e", "\x1b[2J", "<!-- hidden -->", "</details><script>x</script>",
    "#1 GH-2", ":tada:", "**bold** _em_ ~~s~~", " spaced ", "{% raise_exception('@admin [x](https://e)') %}",
]


def _shown(text: str) -> str:
    """What a code span of ``text`` must display: one line, hidden characters escaped."""
    return printable(text.replace("\r\n", " ").replace("\r", " ").replace("\n", " "))


def _report(s: str, n: int) -> Report:
    """A report whose every piece of text is the hostile string ``s`` (with a tag, to tell fields apart)."""
    loc = Location(file=f"{s}.json", key=s, tensor=s, token=s, token_id=3, split=s, column=s, row=1)
    findings = (
        Finding("HVA101", "token-id-beyond-embedding", Severity.ERROR, f"m{n} {s}", loc, hint=f"h{n} {s}",
                fix=Fix(f"d{n} {s}", Applicability.SAFE), cause="c1"),
        Finding("HVA202", "special-token-id-disagreement", Severity.WARNING, s, loc, allowed=f"a{n} {s}"),
    )
    cause = Cause("c1", f"t{n} {s}", f"s{n} {s}", f"f{n} {s}", ("HVA101",), 1)
    split = SplitCoverage(s, s, 3, False, (ColumnCoverage(s, "input_ids", 3, 9),))
    coverage = Coverage(datasets=(split,), not_examined=(Gap(f"w{n} {s}", f"r{n} {s}", hint=f"g{n} {s}"),))
    return Report(target=f"models/{s}", tool_version="0", findings=findings, skipped=(Skipped(f"k{n} {s}", s),),
                  errors=(f"e{n} {s}",), facts={"model_type": s, s: [s]}, causes=(cause,), coverage=coverage)


@pytest.mark.parametrize("n, s", enumerate(HOSTILE), ids=[repr(s)[1:-1][:24] for s in HOSTILE])
def test_hostile_text_stays_text(n, s):
    report = _report(s, n)
    out = markdown.render(report)
    assert live(out) == []
    spans = set(code_spans(out))
    wanted = [f"models/{s}", f"m{n} {s}", f"h{n} {s}", f"d{n} {s}", f"a{n} {s}", f"t{n} {s}", f"s{n} {s}",
              f"f{n} {s}", f"w{n} {s}", f"r{n} {s}", f"g{n} {s}", f"k{n} {s}", f"e{n} {s}", str(report.findings[0].location)]
    if s.strip(" "):  # a code span cannot hold nothing but spaces with them kept (CommonMark strips one each side)
        wanted.append(s)
    assert {_shown(w) for w in wanted} <= spans  # each exactly as written, in one span of its own
    # The findings table and the facts table keep their shape: 5 cells a finding, 2 a fact.
    assert table_rows(out) == [5] * len(report.findings) + [2] * len(report.facts)
    assert [t.tag for t in tokens(out) if t.type == "heading_open"] == ["h2", "h3", "h3"]  # verdict, cause, details
    assert sum(t.type == "blockquote_open" for t in tokens(out)) == len(report.errors)


def test_every_hostile_string_in_one_report():
    """All of them at once, in every field: still one table row a finding and nothing live."""
    s = "".join(HOSTILE)
    out = markdown.render(_report(s, 0))
    assert live(out) == []
    assert _shown(s) in code_spans(out)
    assert table_rows(out)[:2] == [5, 5]


@pytest.mark.parametrize("text", ["plain", "a`b", "``x``", "`", "` `", "x |y| z", "\\`", "   ", "a\nb"])
def test_literal_is_exactly_one_code_span(text):
    for cell in (False, True):
        src = f"| h |\n|---|\n| {markdown.literal(text, cell=True)} |\n" if cell else markdown.literal(text) + "\n"
        spans = code_spans(src)
        assert len(spans) == 1
        assert spans[0] == _shown(text) or (not text.strip() and spans[0].strip() == "")


def test_the_checks_see_what_an_unescaped_report_would_do():
    """The parser-based checks are not vacuous: the strings above are live when written as plain Markdown
    (markdown-it itself refuses ``javascript:`` links; GitHub's sanitizer drops them too)."""
    for s in ("@everyone", "![x](http://e/x.png)", "[a](https://evil.example)", "<img src=x onerror=alert(1)>",
              "https://evil.example", "</details><script>x</script>", "```\ncode"):
        assert live(f"text {s}\n") or live(f"{s}\n"), s
    assert table_rows("| a |\n|---|\n| `x|y` |\n") == [1]  # GFM splits at the pipe (extra cell dropped)
    assert table_rows("| a | b |\n|---|---|\n| `x|y` |\n") == [2]


def test_healthy_report_reads_as_before(broken_report):
    """Report text is shown in code spans; the renderer's own words and the rules' explanations stay prose."""
    out = markdown.render(broken_report)
    assert live(out) == []
    assert out.startswith("## ❌ hf-vocab-audit FAIL: `models/broken`")
    assert "`model.resize_token_embeddings(len(tokenizer))`" in out  # a rule's explanation keeps its code
    assert "- **Why it matters:** `nn.Embedding` indexes its weight" in out


FORMATS = {"markdown": "report.md", "sarif": "report.sarif", "junit": "report.xml", "github": "report.github.txt",
           "text": "report.txt", "html": "report.html"}



@pytest.mark.parametrize("content", [READER_HOSTILE, "`\n```\n``x``\n\n# heading\n> quote\n```"],
                         ids=["markdown-html-bidi", "fences-newlines"])
def test_cli_reports_of_a_hostile_checkpoint(tmp_path, run_cli, content):
    """The real CLI on a checkpoint whose added special token (past the embeddings) is hostile: the gate
    fails, and every report it writes shows the token as inert text, with nothing hidden in it."""
    folder = tiny_checkpoint(tmp_path / "ckpt")
    _added_token(folder, content)
    args = [a for fmt, name in FORMATS.items() for a in ("--format", fmt, "--output-file", str(tmp_path / name))]
    code, _, err = run_cli("check", folder, *args)
    assert code == 1, err
    read = {fmt: (tmp_path / name).read_text(encoding="utf-8") for fmt, name in FORMATS.items()}
    md = read["markdown"]
    assert live(md) == []
    assert table_rows(md)[:2] == [5, 5]  # HVA101 and HVA102: one row each, five cells
    assert sum(repr(content) in span for span in code_spans(md)) >= 4  # message and location of each finding
    sarif = json.loads(read["sarif"])
    junit = ET.fromstring(read["junit"].encode("utf-8"))
    texts = [*strings_of(sarif), *(t for el in junit.iter() for t in (el.text or "", *el.attrib.values())),
             read["github"], read["text"], read["html"]]
    assert not {ch for text in texts for ch in text if ch not in "\n\t" and hidden(ch)}
    assert repr(content) in read["text"] and html.escape(repr(content)) in read["html"]
