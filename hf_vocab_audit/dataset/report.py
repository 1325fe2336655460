"""The dataset section of a report (``Report.dataset``) and the dataset work skipped."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict
from typing import Any

from ..core.findings import Skipped
from ..core.sections import ColumnSection, DatasetSection, Histogram, LabelValues, SplitSection, UncheckedColumn, ValueCount
from .checks import CHAT, CLASS_LABEL, TEXT
from .scan import DatasetFacts
from .summary import HIST_BINS

MAX_LISTED_VALUES = 1000  # unique label values listed per column


def skipped_work(df: DatasetFacts) -> list[Skipped]:
    """Columns without a role and checks whose limit is unknown, each with its reason."""
    out = [Skipped(f"dataset {s.source} split {s.split!r} column {col!r}", reason)
           for s in df.splits for col, reason in s.skipped]
    roles = {p.role for s in df.splits for p in s.columns}
    if CLASS_LABEL in roles and df.limits.num_labels is None:
        out.append(Skipped("dataset label range (HVA510-HVA512, HVA516)",
                           "the model has no classification head, id2label or num_labels"))
    for what, reason in sorted(df.missing.items()):
        out.append(Skipped(f"dataset {what}", reason))
    return out


def _histogram(counts: tuple[int, ...], limit: int, top: Any) -> Histogram:
    """Edges and counts for the plots; the last, open-ended bin closes at the largest value seen."""
    edges = [limit * i / HIST_BINS for i in range(len(counts) + 1)]
    if isinstance(top, int) and top + 1 > edges[-2]:
        edges[-1] = max(edges[-1], top + 1)
    return Histogram(limit, tuple(round(e, 3) for e in edges), tuple(counts))


def _labels(stats: Any) -> LabelValues:
    if stats.uniques_capped:
        return LabelValues(None, None, "more distinct values than tracked")
    ordered = sorted(stats.uniques.items(), key=lambda kv: (isinstance(kv[0], str), kv[0]))
    return LabelValues(len(ordered), tuple(ValueCount(v, c) for v, (c, _, _) in ordered[:MAX_LISTED_VALUES]))


def _column(stats: Any, role: str, limits: Any) -> ColumnSection:
    hists: dict[str, Histogram] = {}
    for key, hist, limit in (("ids", stats.id_hist, limits.input_rows),
                             ("lengths", stats.length_hist,
                              limits.positions if limits.positions is not None else limits.rotary_positions)):
        if hist is not None and limit:
            hists[key] = _histogram(hist, limit, stats.max_length if key == "lengths" else stats.max)
    tokens = stats.tokens if role == TEXT else stats.values if role == CHAT else None
    return ColumnSection(role, stats.rows, stats.values, stats.nulls, stats.min, stats.max, stats.max_length,
                         tokens, hists.get("ids"), hists.get("lengths"),
                         _labels(stats) if role == CLASS_LABEL else None)


def dataset_section(df: DatasetFacts, specs: Iterable[str]) -> DatasetSection:
    """The report's ``dataset`` section: per split, what was read and how, and per column what it held."""
    splits = []
    for s in df.splits:
        columns = {}
        for p in s.columns:
            stats = df.summary.stats.get((s.source, s.split, p.name))
            if stats is not None:
                columns[p.name] = _column(stats, p.role, df.limits)
        splits.append(SplitSection(
            s.source, s.split, s.rows, s.truncated, columns,
            tuple(UncheckedColumn(u.column, u.role, u.reason) for u in s.unchecked), tuple(s.skipped),
            s.format, s.chat_settings if s.format is not None else None,  # a chat/instruction split
            s.mask_preview,
        ))
    return DatasetSection(tuple(specs), sum(s.rows for s in df.splits), round(df.seconds, 3), asdict(df.limits),
                          df.num_labels_source, tuple(splits))
