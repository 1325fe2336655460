"""The dataset section of a report (``Report.extra["dataset"]``) and the dataset work skipped."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict
from typing import Any

from ..core.findings import Skipped
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


def _histogram(counts: tuple[int, ...], limit: int, top: Any) -> dict[str, Any]:
    """Edges and counts for the plots; the last, open-ended bin closes at the largest value seen."""
    edges = [limit * i / HIST_BINS for i in range(len(counts) + 1)]
    if isinstance(top, int) and top + 1 > edges[-2]:
        edges[-1] = max(edges[-1], top + 1)
    return {"limit": limit, "edges": [round(e, 3) for e in edges], "counts": list(counts)}


def _column(stats: Any, role: str, limits: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"role": role, "rows": stats.rows, "values": stats.values, "nulls": stats.nulls,
                           "min": stats.min, "max": stats.max}
    if stats.max_length is not None:
        out["max_length"] = stats.max_length
    if role == TEXT:
        out["tokens"] = stats.tokens
    if role == CHAT:
        out["tokens"] = stats.values
    for key, hist, limit in (("id_histogram", stats.id_hist, limits.input_rows),
                             ("length_histogram", stats.length_hist,
                              limits.positions if limits.positions is not None else limits.rotary_positions)):
        if hist is not None and limit:
            out[key] = _histogram(hist, limit, stats.max_length if key == "length_histogram" else stats.max)
    if role == CLASS_LABEL:
        if stats.uniques_capped:
            out["unique_values"] = None
            out["unique_note"] = "more distinct values than tracked"
        else:
            ordered = sorted(stats.uniques.items(), key=lambda kv: (isinstance(kv[0], str), kv[0]))
            out["unique_count"] = len(ordered)
            out["unique_values"] = [{"value": v, "count": c} for v, (c, _, _) in ordered[:MAX_LISTED_VALUES]]
    return out


def dataset_section(df: DatasetFacts, specs: Iterable[str]) -> dict[str, Any]:
    splits = []
    for s in df.splits:
        columns = {}
        for p in s.columns:
            stats = df.summary.stats.get((s.source, s.split, p.name))
            if stats is not None:
                columns[p.name] = _column(stats, p.role, df.limits)
        splits.append({
            "source": s.source,
            "split": s.split,
            "rows": s.rows,
            "truncated": s.truncated,
            "columns": columns,
            "unchecked": [{"column": u.column, "role": u.role, "reason": u.reason} for u in s.unchecked],
            "skipped_columns": [{"column": c, "reason": r} for c, r in s.skipped],
        })
        if s.format is not None:  # a chat/instruction split: what was read, and with which trainer settings
            splits[-1]["format"] = s.format
            splits[-1]["chat_settings"] = s.chat_settings
    return {
        "specs": list(specs),
        "rows_scanned": sum(s.rows for s in df.splits),
        "seconds": round(df.seconds, 3),
        "limits": asdict(df.limits),
        "num_labels_source": df.num_labels_source,
        "splits": splits,
    }
