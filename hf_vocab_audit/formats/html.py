"""A single self-contained HTML report: verdict, facts, plots (inline SVG images) and findings.

Nothing is fetched at view time (no scripts, fonts or stylesheets from the network). Plots need
matplotlib (``pip install 'hf-vocab-audit[report]'``); without it the page says so and keeps the rest.
The output has no timestamps: the same report renders to the same bytes.
"""

from __future__ import annotations

import base64
import html
from typing import Any

from ..core.report import Report
from . import plots
from .escape import shown

PAGE_CSS = "body{margin:0;background:#fafafa}"
# Every rule is scoped to the report's element: the same style serves the page and a notebook cell. No rule
# depends on the rendering mode: a page served or embedded without its doctype renders in quirks mode, where
# class names match regardless of case (a verdict class ".ERROR" painted every "error" row red) and tables
# do not inherit the page's font and colour; class names therefore differ by more than case, and tables set
# what they would otherwise inherit.
CSS = """
.hva{max-width:1100px;margin:0 auto;padding:24px;font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;
color:#222;overflow-wrap:anywhere}
.hva h1{font-size:22px;margin:0 0 4px} .hva h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd}
.hva .verdict{display:inline-block;padding:4px 12px;border-radius:4px;color:#fff;font-weight:700}
.hva .verdict-fail,.hva .verdict-error{background:#c0392b}.hva .verdict-pass{background:#27ae60}
.hva .verdict-partial{background:#b9770e}
.hva .counts span{margin-right:14px}.hva .muted{color:#777}
.hva table{border-collapse:collapse;width:100%;background:#fff;font-size:13px;color:inherit;font-weight:inherit;
font-style:inherit;line-height:inherit;white-space:inherit}
.hva td,.hva th{border:1px solid #e3e3e3;padding:5px 7px;text-align:left;vertical-align:top}
.hva th{background:#f0f0f0} .hva code{font-size:12px;background:#f3f3f3;padding:0 3px;border-radius:3px}
.hva tr.error td.sev{color:#c0392b;font-weight:700} .hva tr.warning td.sev{color:#b9770e;font-weight:700}
.hva tr.info td.sev{color:#2471a3} .hva tr.allowed{opacity:.55} .hva td.sev,.hva td.rule{white-space:nowrap}
.hva .finding p{margin:0 0 4px} .hva .finding .how{color:#444}
.hva td.bad,.hva span.bad{color:#c0392b;font-weight:700}
.hva .cause{background:#fff;border:1px solid #e3e3e3;border-left:4px solid #c0392b;padding:8px 12px;margin:8px 0}
.hva .cause h3{font-size:15px;margin:0 0 4px} .hva .cause p{margin:4px 0}
.hva figure{margin:12px 0;background:#fff;border:1px solid #e3e3e3;padding:8px}
.hva figure img{max-width:100%;height:auto;display:block} .hva figcaption{font-size:12px;color:#555}
.hva .note{background:#fff8e1;border:1px solid #f0d98c;padding:8px;font-size:13px}
.hva pre.mask{background:#fff;border:1px solid #e3e3e3;padding:8px;white-space:pre-wrap;font-size:12px}
.hva span.t{background:#d5f5e3;text-decoration:underline}
.hva #special-tokens{margin-top:8px} .hva #special-tokens td:nth-child(2){white-space:nowrap}
@media (max-width:600px){.hva{padding:12px}
.hva #findings thead{display:none} .hva #findings tr{display:block;border:1px solid #e3e3e3;margin:0 0 8px}
.hva #findings td{display:block;border:0} .hva #findings td.sev,.hva #findings td.rule{display:inline-block}}
"""


def escape(text: str) -> str:
    """Report text for HTML: hidden characters written visibly first (a bidi override in a token string
    shows as ``\\u202e`` instead of reversing the rest of the line; a zero-width space as ``\\u200b``),
    then HTML-escaped. Every string the page shows goes through here."""
    return html.escape(shown(text))


def prose(text: str) -> str:
    """Rule and cause text for HTML: escaped, with `inline code` set as code (unbalanced backticks stay text)."""
    parts = text.split("`")
    if len(parts) % 2 == 0:
        return escape(text)
    return "".join(escape(part) if i % 2 == 0 else f"<code>{escape(part)}</code>" for i, part in enumerate(parts))


def render(report: Report) -> str:
    """The whole page: one self-contained file."""
    outcome = report.verdict()
    title = f"hf-vocab-audit: {escape(report.target)} - {outcome.verdict}, {len(report.active())} finding(s)"
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width,initial-scale=1">',
        f"<title>{title}</title>",
        f"<style>{PAGE_CSS}{CSS}</style></head><body><main class=\"hva\">",
        body(report),
        "</main></body></html>",
    ]) + "\n"


def fragment(report: Report) -> str:
    """The report for a notebook cell (``Report._repr_html_``): the page's body and its style, scoped to
    the report's own element so the notebook's styles stay as they were."""
    return f'<div class="hva"><style>{CSS}</style>\n{body(report)}\n</div>'


def body(report: Report) -> str:
    outcome = report.verdict()
    counts, verdict, fail_on = outcome.counts, outcome.verdict, outcome.fail_on.value
    active = len(report.active())
    parts = [
        (f'<h1>hf-vocab-audit report <span class="verdict verdict-{verdict.lower()}" id="verdict">{verdict}</span>'
         "</h1>"),
        (f'<p class="muted">{escape(report.target)} &middot; hf-vocab-audit {escape(report.tool_version)} '
         f"&middot; fail-on {escape(fail_on)}" + (" &middot; exit-zero" if outcome.exit_zero else "") + "</p>"),
        '<p class="counts">'
        f'<span><b id="findings-count">{active}</b> finding(s):</span>'
        f"<span>{counts['error']} error(s)</span><span>{counts['warning']} warning(s)</span>"
        f"<span>{counts['info']} info</span>"
        + (f"<span>{counts['allowed']} allowed</span>" if counts["allowed"] else "")
        + "</p>",
        _causes(report),
        _coverage(report),
        _facts_table(report.facts),
        _plots(report),
        _findings_table(report),
        _mask_preview(report),
        _skipped(report),
    ]
    return "\n".join(p for p in parts if p)


def _causes(report: Report) -> str:
    causes = report.active_causes()
    if not causes:
        return ""
    items = "".join(
        f'<div class="cause" id="cause-{escape(c.id)}"><h3>{prose(c.title)}</h3><p>{prose(c.story)}</p>'
        f"<p><b>Fix:</b> {prose(c.fix)}</p>"
        f'<p class="muted">evidence: {c.findings} finding(s), {escape(", ".join(c.codes))}</p></div>'
        for c in causes)
    return f'<h2>Cause{"s" if len(causes) > 1 else ""}</h2><div id="causes">{items}</div>'


def _coverage(report: Report) -> str:
    """What was examined (two lines) and a table of what was not, with how to cover it."""
    cov = report.coverage
    lines = "".join(f"<li>{escape(line)}</li>" for line in cov.summary_lines()[:2])
    out = f'<h2>Coverage</h2><ul id="coverage" class="muted">{lines}</ul>'
    if cov.not_examined:
        rows = "".join(f"<tr><td>{escape(g.what)}</td><td>{escape(g.reason)}</td>"
                       f"<td>{escape(', '.join(g.rules))}</td><td>{prose(g.hint or '')}</td></tr>"
                       for g in cov.not_examined)
        out += ('<table id="not-examined"><thead><tr><th>not examined</th><th>why</th><th>rules</th>'
                f"<th>to cover it</th></tr></thead><tbody>{rows}</tbody></table>")
    return out


def _facts_table(facts: dict[str, Any]) -> str:
    rows = []
    for key, label in (
        ("model_type", "model type"), ("config_vocab_size", "config vocab_size"),
        ("tokenizer_length", "len(tokenizer)"), ("tokenizer_max_id", "largest token id"),
        ("max_position_embeddings", "max_position_embeddings"), ("model_max_length", "model_max_length"),
        ("tied_embeddings", "tied embeddings"),
    ):  # fmt: skip
        if facts.get(key) is not None:
            rows.append(f"<tr><th>{escape(label)}</th><td>{escape(str(facts[key]))}</td></tr>")
    for key, label in (("input_embedding", "input embeddings"), ("output_embedding", "lm_head")):
        t = facts.get(key)
        if t:
            rows.append(f"<tr><th>{label}</th><td><code>{escape(t['name'])}</code> {t['shape']} {escape(t['dtype'])}"
                        f" ({escape(t['file'])})</td></tr>")
    if not rows:
        return ""
    return '<h2>Checkpoint</h2><table id="facts">' + "".join(rows) + "</table>" + _special_table(facts)


def _special_table(facts: dict[str, Any]) -> str:
    """Special-token ids as a table (role, id, has a row?): legible where markers on a plot would stack."""
    specials = {r: i for r, i in (facts.get("special_token_ids") or {}).items() if i is not None}
    if not specials:
        return ""
    emb = facts.get("input_embedding")
    rows = emb["shape"][0] if emb else None
    cells = []
    for role, i in sorted(specials.items(), key=lambda kv: (kv[1], kv[0])):
        bad = rows is not None and i >= rows
        status = f"no row (the embeddings have {rows})" if bad else ("has a row" if rows is not None else "")
        cls = ' class="bad"' if bad else ""
        cells.append(f"<tr><td>{escape(role)}</td><td{cls}>{i}</td><td{cls}>{escape(status)}</td></tr>")
    return ('<table id="special-tokens"><thead><tr><th>special token</th><th>id</th><th>embedding row</th></tr>'
            f"</thead><tbody>{''.join(cells)}</tbody></table>")


def _img(svg: str, alt: str) -> str:
    data = base64.b64encode(svg.encode("utf-8")).decode("ascii")
    return f'<img alt="{escape(alt)}" src="data:image/svg+xml;base64,{data}">'


def _plots(report: Report) -> str:
    wanted = bool(report.facts) or report.weights is not None or report.dataset is not None
    if not wanted:
        return ""
    if not plots.available():
        return ('<h2>Plots</h2><p class="note" id="no-plots">Plots need matplotlib: '
                "<code>pip install 'hf-vocab-audit[report]'</code>.</p>")
    figures: list[tuple[str, str]] = []
    svg = plots.vocabulary_bar(report.facts)
    if svg:
        caption = (f"Vocabulary: {', '.join(plots.vocabulary_labels(report.facts))}; ids with no row in red. "
                   "Special-token ids are in the table above.")
        figures.append((caption, svg))
    if report.weights is not None:
        svg = plots.norm_histograms(report.weights)
        if svg:
            caption = ("Embedding row norms (--weights): untrained, suspect (low-norm), added and padding "
                       "rows marked.")
            figures.append((caption, svg))
    figures.extend(plots.dataset_plots(report.dataset))
    if not figures:
        return ""
    body = "".join(f"<figure>{_img(svg, caption)}<figcaption>{escape(caption)}</figcaption></figure>"
                   for caption, svg in figures)
    return f'<h2>Plots</h2><div id="plots">{body}</div>'


def _findings_table(report: Report) -> str:
    """One row per finding; the message, its location, how to fix it and what --fix does share one wide
    cell, so none of them is squeezed into a narrow column (at 1280 px or on a phone)."""
    if not report.findings:
        return '<h2>Findings</h2><p id="no-findings">No findings.</p>'
    rows = []
    for f in report.findings:
        parts = [f"<p>{prose(f.message)}</p>"]
        if str(f.location):
            parts.append(f'<p class="muted"><code>{escape(str(f.location))}</code></p>')
        if f.hint:
            parts.append(f'<p class="how"><b>How to fix:</b> {prose(f.hint)}</p>')
        if f.fix:
            parts.append(f'<p class="how"><b>--fix:</b> {prose(f.fix.description)} '
                         f'<span class="muted">({f.fix.applicability.value})</span></p>')
        if f.cause:
            parts.append(f'<p class="muted">cause: <a href="#cause-{escape(f.cause)}">{escape(f.cause)}</a></p>')
        if f.allowed:
            parts.append(f'<p class="muted">allowed: {escape(f.allowed)}</p>')
        rows.append(
            f'<tr class="finding {f.severity.value}{" allowed" if f.allowed else ""}">'
            f'<td class="sev">{f.severity.value}</td><td class="rule"><code>{f.code}</code><br>{escape(f.name)}</td>'
            f"<td>{''.join(parts)}</td></tr>"
        )
    return ('<h2>Findings</h2><table id="findings"><thead><tr><th>severity</th><th>rule</th><th>finding</th>'
            "</tr></thead><tbody>" + "".join(rows) + "</tbody></table>")


TRAINED = ' class="t"'


def _mask_preview(report: Report) -> str:
    """``--show-mask``: each previewed row as the trainer gets it, the tokens with a loss highlighted
    (class ``t``); every token's id in its title. Token text is the checkpoint's and the data's: escaped."""
    splits = [s for s in report.dataset.splits if s.mask_preview is not None] if report.dataset is not None else []
    if not splits:
        return ""
    out = ['<h2>Loss preview</h2><div id="mask-preview">']
    for split in splits:
        preview = split.mask_preview
        assert preview is not None
        out.append(f"<h3>{escape(split.source)} split {escape(repr(split.split))}</h3>")
        legend = '<span class="t">highlighted</span>: tokens with a loss (label != -100)'
        if split.chat_settings:
            legend += f" under {escape(split.chat_settings)}"
        out.append(f'<p class="muted">{legend}</p>')
        if preview.note:
            out.append(f'<p class="note">{escape(preview.note)}</p>')
        for row in preview.rows:
            facts = row.facts()
            out.append(f"<p>row {escape(str(row.row))} <code>{escape(row.sequence)}</code>: {escape(', '.join(facts))}</p>")
            if row.problem is not None:
                out.append(f'<p class="muted">{escape(row.problem)}</p>')
                continue
            tokens = "".join(f'<span{TRAINED if t.trained else ""} title="id {escape(str(t.id))}">{escape(t.text)}</span>'
                             for t in row.tokens)
            out.append(f'<pre class="mask">{tokens}</pre>')
    out.append("</div>")
    return "".join(out)


def _skipped(report: Report) -> str:
    if not report.skipped and not report.errors:
        return ""
    items = "".join(f"<li>{escape(s.what)}: {escape(s.reason)}</li>" for s in report.skipped)
    errors = "".join(f"<li class=\"error\">{escape(e)}</li>" for e in report.errors)
    return f'<h2>Skipped</h2><ul id="skipped">{items}{errors}</ul>'
