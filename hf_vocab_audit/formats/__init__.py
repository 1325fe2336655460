"""Renderers: one function per output format, ``render(report) -> str``.

A renderer reads the report and its outcome (``report.verdict()``); it decides nothing and reads no file.
"""

from __future__ import annotations

from collections.abc import Callable

from ..core.report import DISPLAY, Report
from . import github, html, json_format, junit, markdown, sarif, text

Renderer = Callable[[Report], str]

RENDERERS: dict[str, Renderer] = {
    "text": text.render,
    "json": json_format.render,
    "markdown": markdown.render,
    "sarif": sarif.render,
    "junit": junit.render,
    "github": github.render,
    "html": html.render,
}


def render(report: Report, fmt: str) -> str:
    try:
        renderer = RENDERERS[fmt]
    except KeyError:
        raise ValueError(f"unknown format {fmt!r}; choose from {', '.join(RENDERERS)}") from None
    return renderer(report)


def _text_for_display(report: Report) -> str:
    return text.render(report, color=False)


DISPLAY.update(text=_text_for_display, html=html.fragment)  # str(report) and a notebook cell's view
