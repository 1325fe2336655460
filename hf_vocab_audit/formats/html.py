"""A single self-contained HTML report: verdict, facts, plots (inline SVG images) and findings.

Nothing is fetched at view time (no scripts, fonts or stylesheets from the network). Plots need
matplotlib (``pip install 'hf-vocab-audit[report]'``); without it the page says so and keeps the rest.
The output has no timestamps: the same report renders to the same bytes.
"""

from __future__ import annotations

import base64
from html import escape
from typing import Any

from ..core.report import Report
from . import plots

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#222;background:#fafafa}
main{max-width:1100px;margin:0 auto;padding:24px}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd}
.verdict{display:inline-block;padding:4px 12px;border-radius:4px;color:#fff;font-weight:700}
.FAIL,.ERROR{background:#c0392b}.PASS{background:#27ae60}.PARTIAL{background:#b9770e}
.counts span{margin-right:14px}.muted{color:#777}
table{border-collapse:collapse;width:100%;background:#fff;font-size:13px}
td,th{border:1px solid #e3e3e3;padding:5px 7px;text-align:left;vertical-align:top}
th{background:#f0f0f0} code{font-size:12px}
tr.error td.sev{color:#c0392b;font-weight:700} tr.warning td.sev{color:#b9770e;font-weight:700}
tr.info td.sev{color:#2471a3} tr.allowed{opacity:.55}
figure{margin:12px 0;background:#fff;border:1px solid #e3e3e3;padding:8px}
figure img{max-width:100%;height:auto;display:block} figcaption{font-size:12px;color:#555}
.note{background:#fff8e1;border:1px solid #f0d98c;padding:8px;font-size:13px}
"""


def render(report: Report) -> str:
    outcome = report.verdict()
    counts, verdict, fail_on = outcome.counts, outcome.verdict, outcome.fail_on.value
    active = len(report.active())
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width,initial-scale=1">',
        f"<title>hf-vocab-audit: {escape(report.target)} - {verdict}, {active} finding(s)</title>",
        f"<style>{CSS}</style></head><body><main>",
        f"<h1>hf-vocab-audit report <span class=\"verdict {verdict}\" id=\"verdict\">{verdict}</span></h1>",
        (f'<p class="muted">{escape(report.target)} &middot; hf-vocab-audit {escape(report.tool_version)} '
         f"&middot; fail-on {escape(fail_on)}" + (" &middot; exit-zero" if outcome.exit_zero else "") + "</p>"),
        '<p class="counts">'
        f'<span><b id="findings-count">{active}</b> finding(s):</span>'
        f"<span>{counts['error']} error(s)</span><span>{counts['warning']} warning(s)</span>"
        f"<span>{counts['info']} info</span>"
        + (f"<span>{counts['allowed']} allowed</span>" if counts["allowed"] else "")
        + "</p>",
        _coverage(report),
        _facts_table(report.facts),
        _plots(report),
        _findings_table(report),
        _skipped(report),
        "</main></body></html>",
    ]
    return "\n".join(p for p in parts if p) + "\n"


def _coverage(report: Report) -> str:
    """What was examined (two lines) and a table of what was not, with how to cover it."""
    cov = report.coverage
    lines = "".join(f"<li>{escape(line)}</li>" for line in cov.summary_lines()[:2])
    out = f'<h2>Coverage</h2><ul id="coverage" class="muted">{lines}</ul>'
    if cov.not_examined:
        rows = "".join(f"<tr><td>{escape(g.what)}</td><td>{escape(g.reason)}</td>"
                       f"<td>{escape(', '.join(g.rules))}</td><td>{escape(g.hint or '')}</td></tr>"
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
    if facts.get("special_token_ids"):
        ids = ", ".join(f"{escape(r)} {i}" for r, i in facts["special_token_ids"].items())
        rows.append(f"<tr><th>special token ids</th><td>{ids}</td></tr>")
    if not rows:
        return ""
    return '<h2>Checkpoint</h2><table id="facts">' + "".join(rows) + "</table>"


def _img(svg: str, alt: str) -> str:
    data = base64.b64encode(svg.encode("utf-8")).decode("ascii")
    return f'<img alt="{escape(alt)}" src="data:image/svg+xml;base64,{data}">'


def _plots(report: Report) -> str:
    wanted = bool(report.facts) or "weights" in report.extra or "dataset" in report.extra
    if not wanted:
        return ""
    if not plots.available():
        return ('<h2>Plots</h2><p class="note" id="no-plots">Plots need matplotlib: '
                "<code>pip install 'hf-vocab-audit[report]'</code>.</p>")
    figures: list[tuple[str, str]] = []
    svg = plots.vocabulary_bar(report.facts)
    if svg:
        caption = ("Vocabulary: tokenizer ids, embedding rows, lm_head rows and config vocab_size; "
                   "special-token ids marked, ids with no row in red.")
        figures.append((caption, svg))
    if report.extra.get("weights"):
        svg = plots.norm_histograms(report.extra["weights"])
        if svg:
            caption = ("Embedding row norms (--weights): untrained, suspect (low-norm), added and padding "
                       "rows marked.")
            figures.append((caption, svg))
    figures.extend(plots.dataset_plots(report.extra.get("dataset")))
    if not figures:
        return ""
    body = "".join(f"<figure>{_img(svg, caption)}<figcaption>{escape(caption)}</figcaption></figure>"
                   for caption, svg in figures)
    return f'<h2>Plots</h2><div id="plots">{body}</div>'


def _findings_table(report: Report) -> str:
    if not report.findings:
        return '<h2>Findings</h2><p id="no-findings">No findings.</p>'
    rows = []
    for f in report.findings:
        fix = f"{escape(f.fix.description)} <span class=\"muted\">({f.fix.applicability.value})</span>" if f.fix else ""
        allowed = f"<br><span class=\"muted\">allowed: {escape(f.allowed)}</span>" if f.allowed else ""
        rows.append(
            f'<tr class="finding {f.severity.value}{" allowed" if f.allowed else ""}">'
            f'<td class="sev">{f.severity.value}</td><td><code>{f.code}</code><br>{escape(f.name)}</td>'
            f"<td>{escape(f.message)}{allowed}</td><td><code>{escape(str(f.location))}</code></td>"
            f"<td>{escape(f.hint or '')}</td><td>{fix}</td></tr>"
        )
    return ('<h2>Findings</h2><table id="findings"><thead><tr><th>severity</th><th>rule</th><th>message</th>'
            "<th>location</th><th>how to fix</th><th>--fix</th></tr></thead><tbody>" + "".join(rows)
            + "</tbody></table>")


def _skipped(report: Report) -> str:
    if not report.skipped and not report.errors:
        return ""
    items = "".join(f"<li>{escape(s.what)}: {escape(s.reason)}</li>" for s in report.skipped)
    errors = "".join(f"<li class=\"error\">{escape(e)}</li>" for e in report.errors)
    return f'<h2>Skipped</h2><ul id="skipped">{items}{errors}</ul>'
