"""Human-readable report, grouped by severity; colour only on a terminal."""

from __future__ import annotations

import io
import sys

from rich.console import Console
from rich.markup import escape as _markup

from ..core.findings import Severity
from ..core.report import Report
from .escape import printable


def escape(text: str) -> str:
    """Untrusted text for the console: rich markup and terminal control sequences both escaped."""
    return _markup(printable(text))

STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}


def _facts_lines(report: Report) -> list[str]:
    f = report.facts
    lines = []
    if f.get("adapter"):
        a = f["adapter"]
        saved = a["saved_embedding"]
        lines.append(f"adapter           {a['peft_type'] or 'PEFT'} against base {a['base']} (the facts below are the base's)")
        lines.append(f"adapter saves     {saved['rows']} rows ({saved['name']})" if saved else
                     "adapter saves     no embedding rows")
        if a["tokenizer_length"] is not None:
            lines.append(f"adapter tokenizer len {a['tokenizer_length']}")
    if f.get("input_embedding"):
        e = f["input_embedding"]
        lines.append(f"input embeddings  {e['name']} {e['shape']} {e['dtype']} ({e['file']})")
    if f.get("output_embedding"):
        e = f["output_embedding"]
        lines.append(f"output embeddings {e['name']} {e['shape']} {e['dtype']} ({e['file']})")
    elif f.get("tied_embeddings"):
        lines.append("output embeddings tied to the input embeddings")
    if f.get("tokenizer_length") is not None:
        lines.append(f"tokenizer         len {f['tokenizer_length']}, ids up to {f['tokenizer_max_id']}")
    if f.get("config_vocab_size") is not None:
        lines.append(f"config vocab_size {f['config_vocab_size']}")
    for split in report.dataset.splits if report.dataset is not None else ():
        if split.format:  # a chat/instruction split: the format read and what was checked
            checked = ", ".join(f"{c.tokens} tokens of {name!r}" for name, c in split.columns.items()
                                if c.role == "chat")
            lines.append(f"dataset split {split.split!r}: {split.format}: {split.rows} rows"
                         + (f", {checked}" if checked else ", not rendered"))
            if split.chat_settings and "; media: " in split.chat_settings:  # a vision split (images/videos)
                lines.append(f"  media: {split.chat_settings.split('; media: ', 1)[1].split('; template: ')[0]}")
            if split.chat_settings and "; template: " in split.chat_settings:  # not simply the tokenizer's
                lines.append(f"  template: {split.chat_settings.split('; template: ', 1)[1]}")
    return lines


def _fix_lines(console: Console, report: Report) -> None:
    """The --fix section: where it wrote, findings left unfixed and why, notes."""
    fix = report.fix
    if fix is None:
        return
    console.print(f"  written to {escape(fix.output)} ({escape(fix.method)})", style="dim")
    if fix.verification is not None:  # what was proved before the output was renamed into place
        compared = fix.verification.compared
        if compared is not None and compared.bytes_compared:
            console.print(f"  verified: {compared.bytes_compared:,} bytes of weights compared with the input",
                          style="dim")
        console.print(f"  transformers load: {escape(fix.verification.load)}", style="dim")
    if fix.unfixed:
        console.print()
        console.print(f"[bold]NOT FIXED ({len(fix.unfixed)})[/]")
        for u in fix.unfixed:
            console.print(f"  {u.code} {escape(u.message)}")
            console.print(f"    why: {escape(u.reason)}", style="dim")
    for note in fix.notes:
        console.print(f"  note: {escape(note)}", style="dim")


TRAINED_STYLE = "bold green underline"
OPEN, CLOSE = "[[", "]]"  # around the tokens with a loss: legible without colour (CI logs, files)


def _preview_text(text: str, indent: str) -> str:
    """One token's text for the console: escaped (:func:`escape`), a newline written as ``\\n`` and then
    broken onto an indented line, so the rendered turns stay legible and no token starts a line of its own."""
    return ("\\n\n" + indent).join(escape(part) for part in text.split("\n"))


def _mask_preview_lines(console: Console, report: Report) -> None:
    """``--show-mask``: each previewed row, the tokens the trainer computes a loss on between [[ and ]]."""
    splits = [s for s in report.dataset.splits if s.mask_preview is not None] if report.dataset is not None else []
    for split in splits:
        preview = split.mask_preview
        assert preview is not None
        console.print()
        console.print(f"[bold]MASK PREVIEW[/] {escape(split.source)} split {escape(repr(split.split))}")
        console.print(f"  {_markup(OPEN)}...{_markup(CLOSE)}: tokens with a loss (label != -100)"
                      + (f" under {escape(split.chat_settings)}" if split.chat_settings else ""), style="dim")
        if preview.note:
            console.print(f"  note: {escape(preview.note)}", style="dim")
        indent = "    "
        for row in preview.rows:
            facts = row.facts()
            console.print(f"  row {row.row} {escape(row.sequence)}: {escape(', '.join(facts))}")
            if row.problem is not None:
                console.print(f"{indent}{escape(row.problem)}", style="dim")
                continue
            parts: list[str] = []
            inside = False
            for t in row.tokens:
                if t.trained != inside:
                    parts.append(f"[{TRAINED_STYLE}]{_markup(OPEN)}" if t.trained else f"{_markup(CLOSE)}[/]")
                    inside = t.trained
                parts.append(_preview_text(t.text, indent))
            if inside:
                parts.append(f"{_markup(CLOSE)}[/]")
            console.print(indent + "".join(parts))


def _coverage_lines(console: Console, report: Report) -> None:
    """What the verdict covers, in two or three lines, and each part not examined with how to cover it."""
    cov = report.coverage
    console.print()
    for line in cov.summary_lines()[:2]:
        console.print(f"[dim]{escape(line)}[/]")
    if cov.not_examined:
        style = "bold red" if not report.verdict().allow_partial else "bold yellow"
        console.print(f"[{style}]NOT EXAMINED ({len(cov.not_examined)})[/]")
        for g in cov.not_examined:
            rules = f" [{', '.join(g.rules)}]" if g.rules else ""
            console.print(f"  {escape(g.what)}: {escape(g.reason)}{escape(rules)}")
            if g.hint:
                console.print(f"    to cover it: {escape(g.hint)}", style="dim")


def render(report: Report, *, color: bool | None = None) -> str:
    buf = io.StringIO()
    terminal = sys.stdout.isatty() if color is None else color
    # emoji=False: rich would show a token string ":tada:" as an emoji, not as the text the checkpoint holds.
    console = Console(file=buf, force_terminal=terminal, no_color=not terminal, width=100, highlight=False,
                      soft_wrap=True, emoji=False)
    console.print(f"[bold]hf-vocab-audit[/] {escape(report.target)}")
    for line in _facts_lines(report):
        console.print(f"  {escape(line)}", style="dim")
    causes = report.active_causes()
    for n, c in enumerate(causes, 1):
        console.print()
        count = f"{c.findings} finding(s): {', '.join(c.codes)}"
        console.print(f"[bold]CAUSE{f' {n}/{len(causes)}' if len(causes) > 1 else ''}:[/] [bold]{escape(c.title)}[/] "
                      f"[dim]({escape(count)})[/]")
        console.print(f"  {escape(c.story)}")
        console.print(f"  [bold]fix:[/] {escape(c.fix)}")
    for severity in (Severity.ERROR, Severity.WARNING, Severity.INFO):
        group = [f for f in report.findings if f.severity is severity]
        if not group:
            continue
        console.print()
        console.print(f"[{STYLE[severity]}]{severity.value.upper()}S ({len(group)})[/]")
        for f in group:
            allowed = f" [dim](allowed: {escape(f.allowed)})[/]" if f.allowed else ""
            console.print(f"  [{STYLE[severity]}]{f.code}[/] [bold]{f.name}[/]{allowed}")
            console.print(f"    {escape(f.message)}")
            where = str(f.location)
            if where:
                console.print(f"    at {escape(where)}", style="dim")
            if f.cause is not None and causes:
                console.print(f"    cause: {escape(f.cause)}", style="dim")
            if f.hint:
                console.print(f"    fix: {escape(f.hint)}", style="dim")
            if f.fix:
                console.print(f"    --fix: {escape(f.fix.description)} ({f.fix.applicability.value})", style="dim")
    if report.fixes:
        console.print()
        console.print("[bold green]FIXES APPLIED[/]")
        for fx in report.fixes:
            console.print(f"  {fx.code} {escape(fx.description)} ({fx.applicability.value})")
    _fix_lines(console, report)
    _mask_preview_lines(console, report)
    if report.skipped:
        console.print()
        console.print(f"[dim]SKIPPED ({len(report.skipped)})[/]")
        for s in report.skipped:
            console.print(f"  [dim]{escape(s.what)}: {escape(s.reason)}[/]")
    for err in report.errors:
        console.print(f"[red]error:[/] {escape(err)}")
    _coverage_lines(console, report)
    outcome = report.verdict()
    style = "bold red" if outcome.fails else "bold yellow" if outcome.partial else "bold green"
    verdict, _, rest = outcome.summary_line().partition(": ")
    console.print()
    console.print(f"[{style}]{verdict}[/] {escape(rest)}")
    return buf.getvalue()
