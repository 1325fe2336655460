"""Reading a Markdown report back with a CommonMark parser (markdown-it-py, GFM tables and GFM-style
autolinks on), to check what a pull-request comment would hold: no link, image or raw HTML the renderer
did not write itself, no code block, and report text only inside code spans."""

from __future__ import annotations

import re
from collections.abc import Iterator

from markdown_it import MarkdownIt
from markdown_it.token import Token

PARSER = MarkdownIt("gfm-like", {"linkify": True})

# The only raw HTML the renderer writes: collapsible sections whose summary is its own words, and small
# print around code spans. Report text never appears in HTML (GitHub finds mentions in HTML text too).
HTML_BLOCK = re.compile(r"<details><summary>(HVA\d+ [a-z0-9-]+|finding|Skipped \(\d+\)|Facts)</summary>\n"
                        r"|</details>\n")
HTML_INLINE = frozenset({"<sub>", "</sub>", "<br>"})
NEVER = frozenset({"link_open", "image", "fence", "code_block", "hr"})


def tokens(markdown: str) -> list[Token]:
    return PARSER.parse(markdown)


def walk(stream: list[Token]) -> Iterator[Token]:
    for tok in stream:
        yield tok
        if tok.children:
            yield from walk(tok.children)


def code_spans(markdown: str) -> list[str]:
    return [t.content for t in walk(tokens(markdown)) if t.type == "code_inline"]


def live(markdown: str) -> list[str]:
    """Everything in ``markdown`` a reader's renderer would make active: links (autolinks included), images,
    raw HTML the renderer did not write, code blocks (a broken span's fence), ``@name`` outside code."""
    out = []
    for t in walk(tokens(markdown)):
        if t.type in NEVER:
            out.append(f"{t.type}: {t.content or t.attrs}")
        elif t.type == "html_block" and not HTML_BLOCK.fullmatch(t.content):
            out.append(f"html_block: {t.content!r}")
        elif t.type == "html_inline" and t.content not in HTML_INLINE:
            out.append(f"html_inline: {t.content!r}")
        elif t.type == "text" and re.search(r"@\w", t.content):
            out.append(f"mention: {t.content!r}")
    return out


def table_rows(markdown: str) -> list[int]:
    """The number of cells of each body row of every table."""
    rows, cells, body = [], 0, False
    for t in walk(tokens(markdown)):
        if t.type == "tbody_open":
            body = True
        elif t.type == "tbody_close":
            body = False
        elif body and t.type == "tr_open":
            cells = 0
        elif body and t.type == "td_open":
            cells += 1
        elif body and t.type == "tr_close":
            rows.append(cells)
    return rows


def strings_of(value: object) -> list[str]:
    """Every string in a JSON value (keys included): what a report carries, to look for in a rendering."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*strings_of(k), *strings_of(v))]
    if isinstance(value, list):
        return [s for v in value for s in strings_of(v)]
    return []
