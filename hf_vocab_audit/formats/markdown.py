"""Markdown for a pull-request comment or ``$GITHUB_STEP_SUMMARY``: verdict, findings table, details."""

from __future__ import annotations

import html

from ..core.findings import Finding, Severity
from ..core.report import Report
from .escape import printable
from .locate import rule_for

ICON = {Severity.ERROR: "🔴", Severity.WARNING: "🟡", Severity.INFO: "🔵"}


def _cell(text: str) -> str:
    """Prose for a table cell or list item: HTML escaped outside `code spans`, pipes escaped, one line."""
    text = printable(text.replace("\n", " "))
    parts = text.split("`")
    if len(parts) % 2 == 0:  # unbalanced backticks: treat all as prose
        parts = [text.replace("`", "'")]
    out = [html.escape(p, quote=False) if i % 2 == 0 else p for i, p in enumerate(parts)]
    return "`".join(out).replace("|", "\\|")


def _code(text: str) -> str:
    """A code span (shown literally): only pipes need escaping inside a table."""
    return "`" + printable(text.replace("\n", " ")).replace("`", "'").replace("|", "\\|") + "`" if text else ""


def _details(f: Finding) -> list[str]:
    r = rule_for(f.code)
    out = [f"<details><summary>{f.code} {f.name}: {_cell(f.message)}</summary>", ""]
    if str(f.location):
        out.append(f"- **Where:** {_code(str(f.location))}")
    if f.hint:
        out.append(f"- **Fix:** {_cell(f.hint)}")
    if f.fix is not None:
        out.append(f"- **`--fix`:** {_cell(f.fix.description)} ({f.fix.applicability.value})")
    if f.allowed is not None:
        out.append(f"- **Allowed:** {_cell(f.allowed)}")
    if r is not None:
        out.append(f"- **Why it matters:** {_cell(' '.join(r.why.split()))}")
    out += ["", "</details>", ""]
    return out


def render(report: Report) -> str:
    outcome = report.verdict()
    c = outcome.counts
    mark = "❌" if outcome.fails else "⚠️" if outcome.partial else "✅"
    lines = [f"## {mark} hf-vocab-audit {outcome.verdict}: `{_cell(report.target)}`", ""]
    allowed = f", {c['allowed']} allowed" if c["allowed"] else ""
    waived = f", exit-zero: {outcome.failing} at or above it do not fail" if outcome.exit_zero and outcome.failing else ""
    lines.append(
        f"**{c['error']} error(s), {c['warning']} warning(s), {c['info']} info**{allowed} "
        f"(fail-on `{outcome.fail_on.value}`{waived}) · {len(report.rules_run)} rules run · {len(report.skipped)} skipped"
    )
    lines.append("")
    for cause in report.active_causes():
        lines += [f"### Cause: {_cell(cause.title)}", "", _cell(cause.story), "", f"**Fix:** {_cell(cause.fix)}", "",
                  f"<sub>evidence: {cause.findings} finding(s), {', '.join(cause.codes)}</sub>", ""]
    lines += [f"<sub>{_cell(line)}</sub><br>" for line in report.coverage.summary_lines()[:2]]
    lines.append("")
    if report.coverage.not_examined:
        lines += [f"**Not examined ({len(report.coverage.not_examined)})**", ""]
        lines += [f"- {_cell(g.what)}: {_cell(g.reason)}" + (f" (to cover it: {_cell(g.hint)})" if g.hint else "")
                  for g in report.coverage.not_examined]
        lines.append("")
    if report.findings:
        lines += ["| Severity | Code | Rule | Message | Where |", "|---|---|---|---|---|"]
        for f in report.findings:
            sev = f"{ICON[f.severity]} {f.severity.value}" + (" (allowed)" if f.allowed is not None else "")
            lines.append(
                f"| {sev} | `{f.code}` | {f.name} | {_cell(f.message)} | {_code(str(f.location))} |"
            )
        lines += ["", "### Details", ""]
        for f in report.findings:
            lines += _details(f)
    else:
        lines += ["No findings.", ""]
    for err in report.errors:
        lines += [f"> **Error:** {_cell(err)}", ""]
    if report.skipped:
        lines += [f"<details><summary>Skipped ({len(report.skipped)})</summary>", ""]
        lines += [f"- {_cell(s.what)}: {_cell(s.reason)}" for s in report.skipped]
        lines += ["", "</details>", ""]
    facts = {k: v for k, v in report.facts.items() if v not in (None, [], {})}
    if facts:
        lines += ["<details><summary>Facts</summary>", "", "| Fact | Value |", "|---|---|"]
        lines += [f"| {k} | {_code(str(v))} |" for k, v in facts.items()]
        lines += ["", "</details>", ""]
    lines.append(f"<sub>hf-vocab-audit {report.tool_version}</sub>")
    return "\n".join(lines) + "\n"
