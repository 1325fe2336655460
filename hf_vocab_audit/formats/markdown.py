"""Markdown for a pull-request comment or ``$GITHUB_STEP_SUMMARY``: verdict, findings table, details.

Everything the report carries (messages, token strings, template text, file, tensor and column names,
dataset values, allowlist reasons, errors) is written by :func:`literal` as a code span and nowhere else:
a checkpoint's text must not become a link, an image, raw HTML, an ``@mention``, an issue reference or a
new block in a comment its readers trust. On GitHub a code span is also the one place where mentions,
``#123`` references and bare URLs stay text. Only this module's own words and the rule registry's
explanations are written as Markdown.
"""

from __future__ import annotations

import html
import re

from ..core.findings import Finding, Severity
from ..core.report import Report
from .escape import printable
from .locate import rule_for

ICON = {Severity.ERROR: "🔴", Severity.WARNING: "🟡", Severity.INFO: "🔵"}
_BACKTICKS = re.compile(r"`+")
_LINE_END = re.compile(r"\r\n|\r|\n")


def literal(text: str, *, cell: bool = False) -> str:
    """``text`` as a code span, shown exactly as written (CommonMark/GFM): one line (line ends become
    spaces, every other hidden character escaped as ``\\u202e``), delimited by a backtick run longer than
    any inside it and padded with a space where it starts or ends with a backtick, so no text can close it
    early. ``cell``: for a table cell, where GFM splits the row at ``|`` before reading code spans, so each
    pipe is escaped (``\\|``; the table reads it back as ``|``). Empty text is written as nothing."""
    text = printable(_LINE_END.sub(" ", text))
    if not text:
        return ""
    fence = "`" * (max((len(run) for run in _BACKTICKS.findall(text)), default=0) + 1)
    pad = " " if text[0] == "`" or text[-1] == "`" or (text[0] == text[-1] == " " and text.strip(" ")) else ""
    span = f"{fence}{pad}{text}{pad}{fence}"
    return span.replace("|", "\\|") if cell else span


def _prose(text: str) -> str:
    """The rule registry's own explanations (never report data): HTML escaped outside `code spans`."""
    parts = text.split("`")
    if len(parts) % 2 == 0:  # unbalanced backticks: treat all as prose
        parts = [text.replace("`", "'")]
    return "`".join(html.escape(p, quote=False) if i % 2 == 0 else p for i, p in enumerate(parts))


def _details(f: Finding) -> list[str]:
    r = rule_for(f.code)
    # The summary is raw HTML (no Markdown, and GitHub still finds mentions in it): only the registry's words.
    title = f"{r.code} {r.name}" if r is not None else "finding"
    out = [f"<details><summary>{html.escape(title)}</summary>", "", f"- **Message:** {literal(f.message)}"]
    if str(f.location):
        out.append(f"- **Where:** {literal(str(f.location))}")
    if f.hint:
        out.append(f"- **Fix:** {literal(f.hint)}")
    if f.fix is not None:
        out.append(f"- **`--fix`:** {literal(f.fix.description)} ({f.fix.applicability.value})")
    if f.allowed is not None:
        out.append(f"- **Allowed:** {literal(f.allowed)}")
    if r is not None:
        out.append(f"- **Why it matters:** {_prose(' '.join(r.why.split()))}")
    out += ["", "</details>", ""]
    return out


def render(report: Report) -> str:
    outcome = report.verdict()
    c = outcome.counts
    mark = "❌" if outcome.fails else "⚠️" if outcome.partial else "✅"
    lines = [f"## {mark} hf-vocab-audit {outcome.verdict}: {literal(report.target)}", ""]
    allowed = f", {c['allowed']} allowed" if c["allowed"] else ""
    waived = f", exit-zero: {outcome.failing} at or above it do not fail" if outcome.exit_zero and outcome.failing else ""
    lines.append(
        f"**{c['error']} error(s), {c['warning']} warning(s), {c['info']} info**{allowed} "
        f"(fail-on `{outcome.fail_on.value}`{waived}) · {len(report.rules_run)} rules run · {len(report.skipped)} skipped"
    )
    lines.append("")
    for cause in report.active_causes():
        lines += [f"### Cause: {literal(cause.title)}", "", literal(cause.story), "", f"**Fix:** {literal(cause.fix)}",
                  "", f"<sub>evidence: {cause.findings} finding(s), {literal(', '.join(cause.codes))}</sub>", ""]
    lines += [f"<sub>{literal(line)}</sub><br>" for line in report.coverage.summary_lines()[:2]]
    lines.append("")
    if report.coverage.not_examined:
        lines += [f"**Not examined ({len(report.coverage.not_examined)})**", ""]
        lines += [f"- {literal(g.what)}: {literal(g.reason)}" + (f" (to cover it: {literal(g.hint)})" if g.hint else "")
                  for g in report.coverage.not_examined]
        lines.append("")
    if report.findings:
        lines += ["| Severity | Code | Rule | Message | Where |", "|---|---|---|---|---|"]
        for f in report.findings:
            sev = f"{ICON[f.severity]} {f.severity.value}" + (" (allowed)" if f.allowed is not None else "")
            lines.append(f"| {sev} | {literal(f.code, cell=True)} | {literal(f.name, cell=True)} | "
                         f"{literal(f.message, cell=True)} | {literal(str(f.location), cell=True)} |")
        lines += ["", "### Details", ""]
        for f in report.findings:
            lines += _details(f)
    else:
        lines += ["No findings.", ""]
    for err in report.errors:
        lines += [f"> **Error:** {literal(err)}", ""]
    if report.skipped:
        lines += [f"<details><summary>Skipped ({len(report.skipped)})</summary>", ""]
        lines += [f"- {literal(s.what)}: {literal(s.reason)}" for s in report.skipped]
        lines += ["", "</details>", ""]
    facts = {k: v for k, v in report.facts.items() if v not in (None, [], {})}
    if facts:
        lines += ["<details><summary>Facts</summary>", "", "| Fact | Value |", "|---|---|"]
        lines += [f"| {literal(str(k), cell=True)} | {literal(str(v), cell=True)} |" for k, v in facts.items()]
        lines += ["", "</details>", ""]
    lines.append(f"<sub>hf-vocab-audit {literal(report.tool_version)}</sub>")
    return "\n".join(lines) + "\n"
