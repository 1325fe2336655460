"""Renderers: one function per output format, ``render(report) -> str``.

A renderer reads the report and its outcome (``report.verdict()``); it decides nothing and reads no file.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..core.display import DISPLAY

if TYPE_CHECKING:
    from ..core.report import Report

Renderer = Callable[["Report"], str]


# Each renderer's module is imported when its format is asked for: the static gate in a pre-commit hook prints
# one format, and rich (text) or the HTML plots cost more to import than a small audit takes to run.
def _text(report: Report) -> str:
    from . import text

    return text.render(report)


def _json(report: Report) -> str:
    from . import json_format

    return json_format.render(report)


def _markdown(report: Report) -> str:
    from . import markdown

    return markdown.render(report)


def _sarif(report: Report) -> str:
    from . import sarif

    return sarif.render(report)


def _junit(report: Report) -> str:
    from . import junit

    return junit.render(report)


def _github(report: Report) -> str:
    from . import github

    return github.render(report)


def _html(report: Report) -> str:
    from . import html

    return html.render(report)


RENDERERS: dict[str, Renderer] = {
    "text": _text,
    "json": _json,
    "markdown": _markdown,
    "sarif": _sarif,
    "junit": _junit,
    "github": _github,
    "html": _html,
}


def render(report: Report, fmt: str) -> str:
    try:
        renderer = RENDERERS[fmt]
    except KeyError:
        raise ValueError(f"unknown format {fmt!r}; choose from {', '.join(RENDERERS)}") from None
    return renderer(report)


def _text_for_display(report: Report) -> str:
    from . import text

    return text.render(report, color=False)


def _html_for_display(report: Report) -> str:
    from . import html

    return html.fragment(report)


DISPLAY.update(text=_text_for_display, html=_html_for_display)  # str(report) and a notebook cell's view
