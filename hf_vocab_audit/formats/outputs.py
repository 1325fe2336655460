"""Several formats in one run: ``--format`` and ``--output-file`` are both repeatable.

Rule: the output files pair with the formats in order, except that when there is one file fewer
than formats, the first format goes to standard output. ``--format text --format sarif
--format markdown --output-file audit.sarif --output-file audit.md`` prints text and writes the others.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import AuditError
from . import render

if TYPE_CHECKING:  # annotations only
    from ..core.report import Report


def pair_outputs(formats: list[str], files: list[Path]) -> list[tuple[str, Path | None]]:
    """(format, file or None for standard output) pairs; AuditError when the counts do not fit the rule."""
    formats = formats or ["text"]
    if len(files) == len(formats):
        return list(zip(formats, files))
    if len(files) == len(formats) - 1:
        return [(formats[0], None), *zip(formats[1:], files)]
    raise AuditError(
        None,
        f"{len(formats)} --format option(s) and {len(files)} --output-file option(s): give one file per format, "
        "or one fewer to print the first format",
    )


def write_outputs(report: Report, pairs: list[tuple[str, Path | None]]) -> None:
    for fmt, path in pairs:
        if path is None:
            write_stdout(render(report, fmt))
            continue
        if fmt == "text":
            from . import text

            out = text.render(report, color=False)
        else:
            out = render(report, fmt)
        try:
            path.write_text(out, encoding="utf-8", errors="backslashreplace")
        except OSError as exc:
            raise AuditError(path, f"cannot write the report: {exc.strerror or exc}") from None


def write_stdout(text: str) -> None:
    """Reports are UTF-8 whatever the locale (LC_ALL=C must not turn a token into an encoding error)."""
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:
        sys.stdout.write(text)
        return
    try:
        sys.stdout.flush()
        buffer.write(text.encode("utf-8", "backslashreplace"))
        buffer.flush()
    except BrokenPipeError:  # `hf-vocab-audit check m | head`: the reader left; keep the exit code, no traceback
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
