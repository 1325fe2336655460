"""Line numbers of findings in the checkpoint's JSON files, recorded during the audit.

Renderers (SARIF regions, GitHub annotations) never read the disk: a report renders the same wherever it
is rendered, and a report of objects in memory simply has no lines.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from ..core.findings import Finding, Location
from ..io.jsonfile import JsonLines


def json_line(folder: Path, location: Location, files: dict[str, JsonLines] | None = None) -> int | None:
    """1-based line of the location's key (or token) in a JSON file of ``folder`` (``files``: those read
    so far, so that each file is read once)."""
    if not location.file or not location.file.endswith(".json"):
        return None
    lines = (files or {}).get(location.file)
    if lines is None:
        path = folder / location.file
        if not path.is_file():
            return None
        lines = JsonLines(path)
        if files is not None:
            files[location.file] = lines
    if location.key:
        line = lines.line_of_key(location.key.split(".")[-1])
        if line is not None:
            return line
    if location.token:
        return lines.line_of_key(location.token)
    return None


def with_lines(folder: Path, findings: Iterable[Finding]) -> tuple[Finding, ...]:
    """``findings`` with ``Location.line`` filled where the JSON file in ``folder`` has it."""
    out = []
    files: dict[str, JsonLines] = {}
    for f in findings:
        line = json_line(folder, f.location, files)
        out.append(f if line is None else replace(f, location=replace(f.location, line=line)))
    return tuple(out)
