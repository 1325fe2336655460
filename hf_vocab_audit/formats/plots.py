"""Plots for the HTML report, drawn with matplotlib (the optional extra ``hf-vocab-audit[report]``).

Each function takes plain report data and returns SVG text, or None when there is nothing to draw.
Figures use matplotlib's object API (no pyplot, no global backend) and no timestamps, so the same
report gives the same bytes.
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..core.sections import DatasetSection, WeightsSection
from ..io.jsonfile import decimal_int

if TYPE_CHECKING:
    from matplotlib.figure import Figure

COLORS = {
    "ordinary": "#4c72b0", "added": "#55a868", "untrained": "#c44e52", "suspect": "#dd8452",
    "padding": "#a0a0a0", "bad": "#c44e52", "ok": "#4c72b0",
}  # fmt: skip
# text.parse_math off: labels hold token strings and column names, and "$...$" would be parsed as
# mathtext (an unbalanced "$" raises ValueError); text.usetex off: never run LaTeX on them.
RC = {"svg.hashsalt": "hf-vocab-audit", "svg.fonttype": "path", "font.size": 9, "axes.spines.top": False,
      "axes.spines.right": False, "text.parse_math": False, "text.usetex": False}


def available() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _figure(width: float, height: float, ncols: int = 1, nrows: int = 1) -> tuple[Figure, Any]:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    return fig, axes


def _svg(fig: Figure) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    return buf.getvalue()


def _render(draw: Callable[..., Figure | None], *args: Any) -> str | None:
    import matplotlib

    with matplotlib.rc_context(RC), warnings.catch_warnings():  # type: ignore[arg-type]  # matplotlib types rc keys as literals; RC's are valid
        warnings.simplefilter("ignore")  # "Glyph missing from font" for token strings: not the user's problem
        fig = draw(*args)
        return None if fig is None else _svg(fig)


# ---- vocabulary -----------------------------------------------------------------------------------

def vocabulary_bar(facts: dict[str, Any]) -> str | None:
    """Tokenizer length, embedding rows, lm_head rows and config vocab_size as bars, special ids marked."""
    return _render(_draw_vocabulary, facts)


# Heads that project onto the vocabulary: a tied "lm_head" exists only for these (a BERT classifier has none).
LM_HEADS = ("ForCausalLM", "LMHeadModel", "ForMaskedLM", "ForConditionalGeneration", "ForSeq2SeqLM",
            "ForPreTraining", "WithLMHead", "ForSpeechSeq2Seq")


def _has_lm_head(facts: dict[str, Any]) -> bool:
    names = facts.get("architectures") or []
    return not names or any(head in name for name in names for head in LM_HEADS)


TIED_LABEL = "embedding rows (= tied lm_head)"


def _vocab_sizes(facts: dict[str, Any]) -> list[tuple[str, int]]:
    """(label, value) per bar. A tied lm_head is the embedding matrix itself (an HF checkpoint with
    ``tie_word_embeddings``, a GGUF with no ``output.weight``): one bar, labelled so, not a second one that
    reads as a matrix of its own."""
    emb, out = facts.get("input_embedding"), facts.get("output_embedding")
    tied = bool(emb and out is None and facts.get("tied_embeddings") and _has_lm_head(facts))
    sizes = [
        ("tokenizer ids (max id + 1)", None if facts.get("tokenizer_max_id") is None else facts["tokenizer_max_id"] + 1),
        (TIED_LABEL if tied else "embedding rows", emb["shape"][0] if emb else None),
        ("lm_head rows", out["shape"][0] if out else None),
        ("config vocab_size", facts.get("config_vocab_size")),
    ]
    return [(label, int(v)) for label, v in sizes if v is not None]


def vocabulary_labels(facts: dict[str, Any]) -> list[str]:
    """The bars :func:`vocabulary_bar` draws, top to bottom (for the figure's caption and alt text)."""
    return [label for label, _v in _vocab_sizes(facts)]


def _draw_vocabulary(facts: dict[str, Any]) -> Figure | None:
    sizes = _vocab_sizes(facts)
    if not sizes:
        return None
    emb = facts.get("input_embedding")
    rows = emb["shape"][0] if emb else None
    top = max(v for _l, v in sizes)
    low = min(v for _l, v in sizes)
    zoom = low < top and (top - low) < 0.05 * top
    fig, axes = _figure(9.5, 1.0 + 0.42 * len(sizes), ncols=2 if zoom else 1)
    panels: list[tuple[Any, float, float]] = [(axes[0][0], 0, top * 1.02)]
    if zoom:
        margin = max(2, (top - low) * 0.6)
        panels.append((axes[0][1], max(0, low - margin), top + margin))
    labels = [label for label, _v in sizes]
    for ax, lo, hi in panels:
        for y, (label, value) in enumerate(sizes):
            ok = min(value, rows) if rows is not None and label.startswith("tokenizer") else value
            ax.barh(y, ok, color=COLORS["ok"], height=0.6)
            if ok < value:
                ax.barh(y, value - ok, left=ok, color=COLORS["bad"], height=0.6, label="ids with no row")
            ax.text(min(value, hi), y, f" {value:,}", va="center", ha="left" if value < hi * 0.9 else "right",
                    color="white" if value >= hi * 0.9 else "black", fontsize=8)
        if rows is not None:
            ax.axvline(rows, color="black", linestyle="--", linewidth=0.8)
        ax.set_xlim(lo, hi)
        ax.set_ylim(-0.6, len(sizes) + 0.2)
        ax.set_yticks(range(len(sizes)), labels if ax is panels[0][0] else [""] * len(sizes))
        ax.invert_yaxis()
        ax.set_xlabel("token id / rows")
    fig.suptitle("Vocabulary: who has how many ids (dashed: embedding rows)", x=0.01, ha="left", fontsize=10)
    if zoom:
        panels[1][0].set_title("zoom on the end", loc="left")
    return fig


# ---- weights --------------------------------------------------------------------------------------

HIST_KINDS = ("ordinary", "added", "suspect", "untrained", "padding")
SIDE_TITLES = {"input": "input embedding", "output": "lm_head"}


def norm_histograms(weights: WeightsSection) -> str | None:
    """Row-norm histogram per matrix (log x and y), untrained/suspect/added/padding rows marked."""
    return _render(_draw_norms, weights)


def _draw_norms(weights: WeightsSection) -> Figure | None:
    import numpy as np

    sides = list(weights.sides.items())
    if not sides:
        return None
    fig, axes = _figure(9.5, 2.9 * len(sides), nrows=len(sides))
    for (name, side), ax in zip(sides, [row[0] for row in axes]):
        hist = side.histogram
        edges = np.asarray(hist.edges)
        widths = np.diff(edges)
        bottom = np.zeros(len(widths))
        for kind in HIST_KINDS:
            counts = np.asarray(hist.counts.get(kind, [0] * len(widths)), float)
            if counts.any():
                ax.bar(edges[:-1], counts, width=widths, bottom=bottom, align="edge", color=COLORS[kind],
                       label=f"{kind} ({int(counts.sum()):,})", linewidth=0)
            bottom += counts
        ax.set_xscale("log")
        ax.set_yscale("symlog", linthresh=1)
        _plain_ticks(ax)
        ax.set_ylim(0, max(1.0, bottom.max()) * 2)
        if hist.threshold_norm:
            ax.axvline(hist.threshold_norm, color=COLORS["suspect"], linestyle="--", linewidth=1,
                       label=f"low-norm threshold {hist.threshold_norm:.3g}")
        if hist.median_norm:
            ax.axvline(hist.median_norm, color="black", linestyle=":", linewidth=1,
                       label=f"median {hist.median_norm:.3g}")
        zeros = {k: v for k, v in hist.zero_rows.items() if v}
        if zeros:
            text = "all-zero rows (not on a log axis): " + ", ".join(f"{k} {v:,}" for k, v in zeros.items())
            ax.text(0.01, 0.97, text, transform=ax.transAxes, va="top", fontsize=8, color=COLORS["untrained"])
        ax.set_xlabel("row L2 norm (log)")
        ax.set_ylabel("rows")
        ax.set_title(f"{SIDE_TITLES.get(name, name)} {side.tensor} [{side.rows:,} x {side.cols:,}] "
                     f"{side.dtype}", loc="left")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    return fig


# ---- dataset --------------------------------------------------------------------------------------

def _plain_ticks(ax: Any) -> None:
    """Tick labels as plain numbers (0.04, 10, 1000). Log scales label ticks in mathtext
    (``$\\mathdefault{10^{3}}$``), which ``text.parse_math: False`` (set for untrusted labels) would print as is."""
    from matplotlib.ticker import LogFormatter

    for axis in (ax.xaxis, ax.yaxis):  # LogFormatter: the default's choice of ticks to label, in plain text
        axis.set_major_formatter(LogFormatter())
        axis.set_minor_formatter(LogFormatter(labelOnlyBase=False))


def plot_entries(section: DatasetSection) -> dict[str, list[dict[str, Any]]]:
    """The entries below, from the dataset audit's report section (``audit(..., datasets=...)``)."""
    ids: list[dict[str, Any]] = []
    labels: list[dict[str, Any]] = []
    lengths: list[dict[str, Any]] = []
    num_labels = section.limits.get("num_labels")
    for split in section.splits:
        where: dict[str, Any] = {"split": split.split, "column": None}
        for name, column in sorted(split.columns.items()):
            where["column"] = name
            if column.id_histogram is not None:
                ids.append({**where, **column.id_histogram.to_dict()})
            if column.length_histogram is not None:
                # A rotary model's max_position_embeddings is drawn as a line, not a range: longer rows run
                # (HVA505 is info); only an absolute-position limit makes lengths out of range.
                soft = section.limits.get("positions") is None
                lengths.append({**where, **column.length_histogram.to_dict(), "soft_limit": soft})
            if column.labels is not None and column.labels.values:
                counts = {str(v.value): v.count for v in column.labels.values}
                labels.append({**where, "num_labels": num_labels, "counts": counts})
    return {"id_columns": ids, "label_counts": labels, "lengths": lengths}


def dataset_plots(dataset: DatasetSection | dict[str, Any] | None) -> list[tuple[str, str]]:
    """(caption, svg) per plot of the report's ``dataset`` section (or of plot entries); empty when absent.

    The entries' shape (every key optional)::

        {"id_columns": [{"split": "train", "column": "input_ids", "limit": 32000,
                         "edges": [0, 1000, ...], "counts": [12, 40, ...]}],
         "label_counts": [{"split": "train", "column": "labels", "num_labels": 3,
                           "counts": {"0": 50, "1": 40, "3": 2}}],
         "lengths": [{"split": "train", "column": "input_ids", "limit": 512,
                      "edges": [0, 64, ...], "counts": [5, 9, ...]}]}

    ``limit`` is the first value with no row (embedding rows, type_vocab_size, num_labels, usable positions).
    """
    if isinstance(dataset, DatasetSection):
        dataset = plot_entries(dataset)
    if not dataset:
        return []
    out = []
    for entry in dataset.get("id_columns") or []:
        svg = _render(_draw_ranged_hist, entry, "token id", "ids")
        if svg:
            out.append((f"{entry.get('split')}/{entry.get('column')}: ids against {entry.get('limit')} rows", svg))
    if dataset.get("label_counts"):
        svg = _render(_draw_labels, dataset["label_counts"])
        if svg:
            out.append(("label value counts per split", svg))
    for entry in dataset.get("lengths") or []:
        svg = _render(_draw_ranged_hist, entry, "sequence length", "sequences")
        if svg:
            against = (f"beside max_position_embeddings {entry.get('limit')} (rotary: not a limit)"
                       if entry.get("soft_limit") else f"against {entry.get('limit')} usable positions")
            caption = f"{entry.get('split')}/{entry.get('column')}: lengths {against}"
            out.append((caption, svg))
    return out


def _draw_ranged_hist(entry: dict[str, Any], xlabel: str, ylabel: str) -> Figure | None:
    import numpy as np

    edges, counts = np.asarray(entry.get("edges") or [], float), np.asarray(entry.get("counts") or [], float)
    if len(edges) != len(counts) + 1 or not len(counts):
        return None
    limit = entry.get("limit")
    fig, axes = _figure(9.5, 2.4)
    ax = axes[0][0]
    soft = bool(entry.get("soft_limit"))
    colors = [COLORS["bad"] if limit is not None and not soft and lo >= limit else COLORS["ok"] for lo in edges[:-1]]
    ax.bar(edges[:-1], counts, width=np.diff(edges), align="edge", color=colors, linewidth=0)
    hi = max(edges[-1], (limit or 0) * 1.05)
    if limit is not None and soft:
        ax.axvline(limit, color="black", linestyle=":", linewidth=1,
                   label=f"max_position_embeddings {limit:,} (rotary: longer rows still run)")
        ax.legend(fontsize=7, frameon=False)
    elif limit is not None:
        ax.axvspan(limit, hi, color=COLORS["bad"], alpha=0.12, label=f"out of range (>= {limit:,})")
        ax.axvline(limit, color=COLORS["bad"], linewidth=1)
        ax.legend(fontsize=7, frameon=False)
    ax.set_xlim(edges[0], hi)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(f"{entry.get('split')} / {entry.get('column')}", loc="left")
    return fig


def _draw_labels(entries: list[dict[str, Any]]) -> Figure | None:
    """Counts per label value on an axis that starts at 0 (the smallest legal class) and shows every legal
    class, seen or not; values outside 0..num_labels-1 are red bars (the ignore index -100 is not)."""
    import numpy as np

    entries = [e for e in entries if e.get("counts")]
    if not entries:
        return None

    def order(k: str) -> tuple[bool, int, str]:
        value = decimal_int(k)
        return value is None, value or 0, k

    nums: list[int] = [n for e in entries if isinstance(n := e.get("num_labels"), int)]
    top = max(nums) if nums else None
    legal = [str(v) for v in range(top)] if top is not None and top <= 200 else []
    labels = sorted({k for e in entries for k in e["counts"]} | set(legal), key=order)
    fig, axes = _figure(9.5, 2.6)
    ax = axes[0][0]
    width = 0.8 / len(entries)
    x = np.arange(len(labels))
    outside = False
    for n, e in enumerate(entries):
        counts = [e["counts"].get(k, 0) for k in labels]
        num = e.get("num_labels")
        values = [decimal_int(k) for k in labels]
        bad = [num is not None and v is not None and not (0 <= v < num or v == -100) for v in values]
        outside = outside or any(b and c for b, c in zip(bad, counts))
        shade = 0.35 + 0.65 * (len(entries) - n) / len(entries)
        colors = [COLORS["bad"] if b else (0.30 * shade, 0.45 * shade, 0.69, 1.0) for b in bad]
        ax.bar(x + n * width, counts, width=width, label=f"{e.get('split')}/{e.get('column')}", color=colors)
    ax.set_xticks(x + width * (len(entries) - 1) / 2, labels)
    for tick, value in zip(ax.get_xticklabels(), [decimal_int(k) for k in labels]):
        if top is not None and value is not None and not (0 <= value < top or value == -100):
            tick.set_color(COLORS["bad"])
    legal_text = f"legal: 0..{top - 1}" if top is not None else "num_labels unknown"
    ax.set_xlabel(f"label value ({legal_text}; red: outside it)" if outside else f"label value ({legal_text})")
    ax.set_ylabel("count")
    ax.legend(fontsize=7, frameon=False)
    ax.set_title("Label values per split", loc="left")
    return fig
