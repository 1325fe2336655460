"""What a scan of a batch yields and how summaries combine: column roles, violations, column stats,
one associative ``merge`` (any order gives the same answer) and mergeable fixed-edge histograms."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..facts.limits import InputLimits

MAX_LOCATIONS = 5  # exact locations kept per check
HIST_BINS = 32  # histogram bins from 0 up to a limit (embedding rows, usable positions) ...
HIST_OVER = 8  # ... and past it; the last bin is open-ended
UNIQUE_CAP = 10_000  # distinct label values tracked before a column counts as "too many to list"
TOP_CAP = 100_000  # distinct offending values counted before the counter is dropped
MAX_NOTES = 64  # turn notes kept per column (the first located values need a handful)


@dataclass(frozen=True)
class ColumnRole:
    name: str
    role: str
    names: tuple[str, ...] | None = None  # ClassLabel names, when the feature declares them
    input_ids_column: str | None = None  # for LM labels: the aligned input_ids column (eos check)
    nested: bool = False  # multiple choice: one list of ids per choice, choices x length per row


@dataclass(frozen=True)
class ScanContext:
    source: str
    split: str
    columns: tuple[ColumnRole, ...]
    limits: InputLimits  # the one limits model (facts.limits), as the static rules and the guard read it
    tokenizer: Any = field(default=None, repr=False, compare=False)  # tokenizers.Tokenizer, no pad/truncation
    tokenizer_file: str = ""  # named when the library fails on a row
    causal_lm: bool = False
    max_locations: int = MAX_LOCATIONS
    histograms: bool = False  # only the HTML report plots them
    chat: Any = field(default=None, repr=False, compare=False)  # chat_render.Renderer of a chat split
    watch: tuple[int, ...] = ()  # sorted ids whose uses are counted (WATCHED): untrained rows left frozen


@dataclass(frozen=True)
class Violation:
    """Offending values of one check in one column of one split."""

    values: int
    rows: int
    locations: tuple[tuple[int, int | None, Any], ...]  # (row, position, value), first by (row, position)
    top: dict[Any, int] | None  # offending value -> count; None once more than TOP_CAP distinct


@dataclass(frozen=True)
class ColumnStats:
    rows: int = 0
    values: int = 0
    nulls: int = 0
    min: Any = None
    max: Any = None
    max_length: int | None = None
    tokens: int = 0  # tokens produced by tokenizing a text column
    uniques: dict[Any, tuple[int, int, int | None]] | None = None  # value -> (count, first row, first position)
    uniques_capped: bool = False
    id_hist: tuple[int, ...] | None = None  # ids against the embedding rows (see histogram())
    length_hist: tuple[int, ...] | None = None  # sequence lengths against the usable positions


Key = tuple[str, str, str]  # (source, split, column)


@dataclass(frozen=True)
class Summary:
    rows: dict[tuple[str, str], int] = field(default_factory=dict)  # (source, split) -> rows seen
    stats: dict[Key, ColumnStats] = field(default_factory=dict)
    violations: dict[tuple[str, str, str, str], Violation] = field(default_factory=dict)  # Key + (check,)
    # (source, split, column, row, position) -> where a located value sits in a rendered chat row ("turn 1 (user)")
    notes: dict[tuple[str, str, str, int, int], str] = field(default_factory=dict)


# ----------------------------------------------------------------------------------------- merge


def _pos(position: int | None) -> int:
    return -1 if position is None else position


def _merge_locations(a: tuple, b: tuple, limit: int = MAX_LOCATIONS) -> tuple:
    return tuple(sorted(a + b, key=lambda loc: (loc[0], _pos(loc[1])))[:limit])


def _merge_counts(a: dict | None, b: dict | None, cap: int) -> dict | None:
    if a is None or b is None:
        return None
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + v
    return out if len(out) <= cap else None


def merge_violation(a: Violation, b: Violation) -> Violation:
    return Violation(
        a.values + b.values,
        a.rows + b.rows,
        _merge_locations(a.locations, b.locations),
        _merge_counts(a.top, b.top, TOP_CAP),
    )


def _pick(a: Any, b: Any, fn: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    return fn(a, b)


def merge_stats(a: ColumnStats, b: ColumnStats) -> ColumnStats:
    capped = a.uniques_capped or b.uniques_capped
    uniques = None
    if a.uniques is not None or b.uniques is not None:
        uniques = dict(a.uniques or {})
        for value, (count, row, pos) in (b.uniques or {}).items():
            old = uniques.get(value)
            if old is None:
                uniques[value] = (count, row, pos)
            else:
                first = min((old[1], _pos(old[2])), (row, _pos(pos)))
                uniques[value] = (old[0] + count, first[0], None if first[1] < 0 else first[1])
        if len(uniques) > UNIQUE_CAP or capped:
            uniques, capped = {}, True
    return ColumnStats(
        rows=a.rows + b.rows,
        values=a.values + b.values,
        nulls=a.nulls + b.nulls,
        min=_pick(a.min, b.min, min),
        max=_pick(a.max, b.max, max),
        max_length=_pick(a.max_length, b.max_length, max),
        tokens=a.tokens + b.tokens,
        uniques=uniques,
        uniques_capped=capped,
        id_hist=_pick(a.id_hist, b.id_hist, _add),
        length_hist=_pick(a.length_hist, b.length_hist, _add),
    )


def _add(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(x + y for x, y in zip(a, b, strict=True))


def histogram(values: np.ndarray, limit: int | None, lowest: Any = None) -> tuple[int, ...] | None:
    """Counts of non-negative ``values`` in HIST_BINS equal bins up to ``limit`` and HIST_OVER past it.

    Bin i covers [i*limit/HIST_BINS, (i+1)*limit/HIST_BINS); ``limit`` is always an edge, so the
    out-of-range region starts exactly at bin HIST_BINS. Fixed edges make histograms mergeable.
    ``lowest`` (the minimum, when the caller already knows it) saves a pass over ``values``.
    """
    if limit is None or limit <= 0:
        return None
    if lowest is None:
        lowest = values.min() if values.size else 0
    kept = values[values >= 0] if lowest < 0 else values
    idx = kept.astype(np.int64, copy=False) * HIST_BINS  # one temporary, then in place
    idx //= limit
    np.minimum(idx, HIST_BINS + HIST_OVER - 1, out=idx)
    return tuple(int(c) for c in np.bincount(idx, minlength=HIST_BINS + HIST_OVER))


def merge(a: Summary, b: Summary) -> Summary:
    """Combine two summaries (associative and commutative: any order gives the same result)."""
    rows = dict(a.rows)
    for k, v in b.rows.items():
        rows[k] = rows.get(k, 0) + v
    stats = dict(a.stats)
    for column, s in b.stats.items():
        stats[column] = merge_stats(stats[column], s) if column in stats else s
    violations = dict(a.violations)
    for check, found in b.violations.items():
        violations[check] = merge_violation(violations[check], found) if check in violations else found
    notes = a.notes
    if b.notes:
        notes = dict(a.notes) | b.notes
        if len(notes) > MAX_NOTES:  # per column, the smallest (row, position) keys: those the locations keep
            kept: dict[tuple[str, str, str], int] = {}
            pruned = {}
            for key, note in sorted(notes.items()):
                if kept.get(key[:3], 0) < MAX_NOTES:
                    kept[key[:3]] = kept.get(key[:3], 0) + 1
                    pruned[key] = note
            notes = pruned
    return Summary(rows, stats, violations, notes)
