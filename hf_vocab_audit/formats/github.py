"""GitHub Actions workflow commands: one ``::error``/``::warning``/``::notice`` annotation per finding."""

from __future__ import annotations

from ..core.findings import Severity
from ..core.report import Report
from .escape import printable
from .locate import artifact_path

COMMAND = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def _data(text: str) -> str:
    """A command's message: newlines kept as %0A (annotations are multi-line), other controls escaped."""
    return printable(text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def _plain(text: str) -> str:
    """A plain log line: one line, so nothing in it can start a line with ``::`` (a workflow command)."""
    return printable(text)


def _prop(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def render(report: Report) -> str:
    lines = []
    for c in report.active_causes():  # the cause and its one fix first: the lines a CI log reader sees
        body = f"{c.story}\nfix: {c.fix}\nevidence: {c.findings} finding(s), {', '.join(c.codes)}"
        lines.append(f"::error title={_prop('cause: ' + c.title)}::{_data(body)}")
    for f in report.active():
        props = []
        file = artifact_path(report, f.location.file)
        if file:
            props.append(f"file={_prop(file)}")
            line = f.location.line
            if line is not None:
                props.append(f"line={line}")
        props.append(f"title={_prop(f'{f.code} {f.name}')}")
        body = f.message + (f"\nat {f.location}" if str(f.location) else "") + (f"\nfix: {f.hint}" if f.hint else "")
        lines.append(f"::{COMMAND[f.severity]} {','.join(props)}::{_data(body)}")
    for f in report.findings:
        if f.allowed is not None:
            lines.append(_plain(f"hf-vocab-audit: allowed {f.code} {f.name}: {f.allowed}"))
    for err in report.errors:
        lines.append(f"::error title=hf-vocab-audit::{_data(err)}")
    level = "warning" if report.verdict().allow_partial else "error"
    for g in report.coverage.not_examined:
        body = f"not examined: {g.what}: {g.reason}" + (f"\nto cover it: {g.hint}" if g.hint else "")
        lines.append(f"::{level} title=hf-vocab-audit not examined::{_data(body)}")
    lines.append(_plain(f"hf-vocab-audit {report.target}: {report.verdict().summary_line()}"))
    return "\n".join(lines) + "\n"
