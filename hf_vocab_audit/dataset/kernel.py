"""The scan kernel: ``summarize(batch, row_offset, context) -> Summary`` and one associative ``merge``.

Pure functions over one Arrow batch (vectorised with numpy; no per-token Python loops, no global
state), so the same kernel and merge run in a local loop or on a distributed engine. A summary holds
counts, min/max, capped unique-value counts and the first offending locations of each check, ordered
by (row, position) so merging in any order gives the same answer.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .checks import (  # noqa: F401 - re-exported names the rules read
    ALL_MASKED,
    ATTENTION_MASK,
    BEYOND_ROTARY,
    CLASS_LABEL,
    EOS_MASKED,
    ID_ROLES,
    ID_TOO_LARGE,
    IGNORE_INDEX,
    INPUT_IDS,
    LABEL_MINUS_ONE,
    LABEL_OUT_OF_RANGE,
    LENGTH_MISMATCH,
    LM_LABEL_TOO_LARGE,
    LM_LABELS,
    NEGATIVE,
    NULL,
    POSITION_IDS,
    POSITION_TOO_LARGE,
    TEXT,
    TOKEN_TYPE_IDS,
    TOO_LONG,
    TYPE_TOO_LARGE,
)

MAX_LOCATIONS = 5  # exact locations kept per check
HIST_BINS = 32  # histogram bins from 0 up to a limit (embedding rows, usable positions) ...
HIST_OVER = 8  # ... and past it; the last bin is open-ended
UNIQUE_CAP = 10_000  # distinct label values tracked before a column counts as "too many to list"
TOP_CAP = 100_000  # distinct offending values counted before the counter is dropped


@dataclass(frozen=True)
class Limits:
    """What the model can take; None means "not known, not checked"."""

    input_rows: int | None = None
    output_rows: int | None = None
    type_vocab_size: int | None = None
    positions: int | None = None  # usable learned absolute positions
    rotary_positions: int | None = None  # max_position_embeddings of a rotary model (info only)
    num_labels: int | None = None
    tokenizer_max_id: int | None = None
    eos_id: int | None = None  # set only when pad == eos


@dataclass(frozen=True)
class ColumnPlan:
    name: str
    role: str
    names: tuple[str, ...] | None = None  # ClassLabel names, when the feature declares them
    input_ids_column: str | None = None  # for LM labels: the aligned input_ids column (eos check)


@dataclass(frozen=True)
class ScanContext:
    source: str
    split: str
    columns: tuple[ColumnPlan, ...]
    limits: Limits
    tokenizer: Any = field(default=None, repr=False, compare=False)  # tokenizers.Tokenizer, no pad/truncation
    causal_lm: bool = False
    max_locations: int = MAX_LOCATIONS
    histograms: bool = False  # only the HTML report plots them


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
    for k, s in b.stats.items():
        stats[k] = merge_stats(stats[k], s) if k in stats else s
    violations = dict(a.violations)
    for k, v in b.violations.items():
        violations[k] = merge_violation(violations[k], v) if k in violations else v
    return Summary(rows, stats, violations)


# ---------------------------------------------------------------------------------- array helpers


def _as_array(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    if isinstance(column, pa.ChunkedArray):
        return column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    return column


def is_list(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t) or (
        hasattr(pa.types, "is_list_view") and (pa.types.is_list_view(t) or pa.types.is_large_list_view(t))
    )


def is_integer_like(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_boolean(t)


def flat_sequences(arr: pa.Array) -> tuple[np.ndarray, np.ndarray, int, int]:
    """(values, offsets, null rows, null values) of a list<int> array; offsets has len(arr) + 1 entries."""
    if (pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type)) and not arr.null_count:
        raw = arr.offsets.to_numpy(zero_copy_only=False)  # zero-copy view; rebased when the array is a slice
        offsets = (raw - raw[0]).astype(np.int64, copy=False) if raw[0] else raw.astype(np.int64, copy=False)
    else:
        lengths = pc.list_value_length(arr).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
    flat = arr.flatten()
    null_values = flat.null_count
    if null_values:
        flat = flat.fill_null(0)
    if pa.types.is_boolean(flat.type):
        flat = flat.cast(pa.int8())
    values = flat.to_numpy(zero_copy_only=False)
    return values, offsets, arr.null_count, null_values


def _scalars(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(values, valid mask) of a scalar numeric array; nulls become 0 with valid False."""
    valid = np.ones(len(arr), dtype=bool)
    if arr.null_count:
        valid = arr.is_valid().to_numpy(zero_copy_only=False)
        arr = arr.fill_null(0)
    if pa.types.is_boolean(arr.type):
        arr = arr.cast(pa.int8())
    return arr.to_numpy(zero_copy_only=False), valid


def _py(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def violation(
    mask: np.ndarray, values: np.ndarray | None, offsets: np.ndarray | None, row_offset: int, limit: int
) -> Violation | None:
    """Offending entries where ``mask`` is set. With ``offsets`` the mask is over flat sequence values
    (locations get a position); without, it is over rows. ``values`` None: count rows only."""
    idx = np.flatnonzero(mask)
    if idx.size == 0:
        return None
    if offsets is not None:
        rows = np.searchsorted(offsets, idx, side="right") - 1
        positions: np.ndarray | None = idx - offsets[rows]
    else:
        rows, positions = idx, None
    n_rows = 1 + int(np.count_nonzero(np.diff(rows))) if rows.size else 0
    bad = values[idx] if values is not None else None
    head = idx.size if limit is None else min(limit, idx.size)
    locations = tuple(
        (
            int(rows[i]) + row_offset,
            None if positions is None else int(positions[i]),
            None if bad is None else _py(bad[i]),
        )
        for i in range(head)
    )
    top: dict[Any, int] | None = None
    if bad is not None:
        uniq, counts = np.unique(bad, return_counts=True)
        top = {_py(u): int(c) for u, c in zip(uniq, counts)} if uniq.size <= TOP_CAP else None
    return Violation(int(idx.size), n_rows, locations, top)


def row_violation(
    mask: np.ndarray, values: np.ndarray, row_offset: int, limit: int, position: int | None = None
) -> Violation | None:
    """Offending rows (one location per row, at ``position``), e.g. sequences that are too long."""
    v = violation(mask, values, None, row_offset, limit)
    if v is None or position is None:
        return v
    return replace(v, locations=tuple((r, position, val) for r, _, val in v.locations))


def _uniques(values: np.ndarray, rows: np.ndarray, positions: np.ndarray | None, row_offset: int) -> dict:
    uniq, first, counts = np.unique(values, return_index=True, return_counts=True)
    if uniq.size > UNIQUE_CAP:
        return {}
    return {
        _py(u): (int(c), int(rows[i]) + row_offset, None if positions is None else int(positions[i]))
        for u, i, c in zip(uniq, first, counts)
    }


def _minmax(values: np.ndarray) -> tuple[Any, Any]:
    if values.size == 0:
        return None, None
    return _py(values.min()), _py(values.max())


# ------------------------------------------------------------------------------------ the kernel


class _Acc:
    """Collects one batch's stats and violations (a local builder; the result is a frozen Summary)."""

    def __init__(self, ctx: ScanContext):
        self.ctx = ctx
        self.stats: dict[Key, ColumnStats] = {}
        self.violations: dict[tuple[str, str, str, str], Violation] = {}

    def add(self, column: str, check: str, v: Violation | None) -> None:
        if v is not None:
            key = (self.ctx.source, self.ctx.split, column, check)
            self.violations[key] = merge_violation(self.violations[key], v) if key in self.violations else v

    def stat(self, column: str, s: ColumnStats) -> None:
        self.stats[(self.ctx.source, self.ctx.split, column)] = s


def _sequence_checks(
    acc: _Acc, plan: ColumnPlan, values: np.ndarray, offsets: np.ndarray, row_offset: int
) -> tuple[np.ndarray, Any, Any]:
    """Range and length checks of an id sequence column; returns the row lengths, min and max."""
    lim, n = acc.ctx.limits, acc.ctx.max_locations
    lengths = np.diff(offsets)
    lo, hi = _minmax(values)  # two passes; the range checks below run only when min/max say they can fire
    if plan.role in ID_ROLES and lo is not None and lo < 0:
        acc.add(plan.name, NEGATIVE, violation(values < 0, values, offsets, row_offset, n))
    if hi is None:
        pass
    elif plan.role == INPUT_IDS and lim.input_rows is not None and hi >= lim.input_rows:
        acc.add(plan.name, ID_TOO_LARGE, violation(values >= lim.input_rows, values, offsets, row_offset, n))
    elif plan.role == TOKEN_TYPE_IDS and lim.type_vocab_size is not None and hi >= lim.type_vocab_size:
        acc.add(plan.name, TYPE_TOO_LARGE, violation(values >= lim.type_vocab_size, values, offsets, row_offset, n))
    elif plan.role == POSITION_IDS and lim.positions is not None and hi >= lim.positions:
        acc.add(plan.name, POSITION_TOO_LARGE, violation(values >= lim.positions, values, offsets, row_offset, n))
    if plan.role in (INPUT_IDS, TEXT):
        _length_checks(acc, plan.name, lengths, row_offset)
    return lengths, lo, hi


def _position_limit(lim: Limits) -> int | None:
    return lim.positions if lim.positions is not None else lim.rotary_positions


def _histograms(acc: _Acc, plan: ColumnPlan, values: np.ndarray, lengths: np.ndarray, lo: Any) -> dict[str, Any]:
    """The plots' histograms of an input_ids column: ids against rows, lengths against positions."""
    if plan.role != INPUT_IDS or not acc.ctx.histograms:
        return {}
    lim = acc.ctx.limits
    return {"id_hist": histogram(values, lim.input_rows, 0 if lo is None else lo),
            "length_hist": histogram(lengths, _position_limit(lim), 0)}


def _length_checks(acc: _Acc, column: str, lengths: np.ndarray, row_offset: int) -> None:
    lim, n = acc.ctx.limits, acc.ctx.max_locations
    if lim.positions is not None:
        acc.add(column, TOO_LONG, row_violation(lengths > lim.positions, lengths, row_offset, n, lim.positions))
    elif lim.rotary_positions is not None:
        acc.add(column, BEYOND_ROTARY,
                row_violation(lengths > lim.rotary_positions, lengths, row_offset, n, lim.rotary_positions))


def _null_rows(acc: _Acc, column: str, arr: pa.Array, row_offset: int) -> None:
    if arr.null_count:
        mask = arr.is_null().to_numpy(zero_copy_only=False)
        acc.add(column, NULL, row_violation(mask, np.full(len(arr), None, dtype=object), row_offset,
                                            acc.ctx.max_locations))


def _id_column(acc: _Acc, plan: ColumnPlan, arr: pa.Array, row_offset: int, batch: pa.Table) -> None:
    if is_list(arr.type):
        values, offsets, null_rows, _ = flat_sequences(arr)
        _null_rows(acc, plan.name, arr, row_offset)
        lengths, lo, hi = _sequence_checks(acc, plan, values, offsets, row_offset)
        hists = _histograms(acc, plan, values, lengths, lo)
        acc.stat(plan.name, ColumnStats(len(arr), int(values.size), null_rows, lo, hi,
                                        int(lengths.max()) if lengths.size else None, **hists))
        if (plan.role == INPUT_IDS and acc.ctx.causal_lm and acc.ctx.limits.eos_id is not None
                and not any(p.role == LM_LABELS and p.input_ids_column == plan.name for p in acc.ctx.columns)):
            acc.add(plan.name, EOS_MASKED, violation(values == acc.ctx.limits.eos_id, values, offsets,
                                                         row_offset, acc.ctx.max_locations))
        return
    values, valid = _scalars(arr)  # one id per row (e.g. a single-token column)
    _null_rows(acc, plan.name, arr, row_offset)
    offsets = np.arange(len(values) + 1, dtype=np.int64)
    lim, n = acc.ctx.limits, acc.ctx.max_locations
    acc.add(plan.name, NEGATIVE, violation((values < 0) & valid, values, None, row_offset, n))
    if plan.role == INPUT_IDS and lim.input_rows is not None:
        acc.add(plan.name, ID_TOO_LARGE, violation((values >= lim.input_rows) & valid, values, None, row_offset, n))
    if plan.role == TOKEN_TYPE_IDS and lim.type_vocab_size is not None:
        acc.add(plan.name, TYPE_TOO_LARGE,
                violation((values >= lim.type_vocab_size) & valid, values, None, row_offset, n))
    lo, hi = _minmax(values[valid])
    acc.stat(plan.name, ColumnStats(len(arr), int(valid.sum()), arr.null_count, lo, hi, 1 if len(arr) else None))
    del offsets


def _text_column(acc: _Acc, plan: ColumnPlan, arr: pa.Array, row_offset: int) -> None:
    """Tokenize as a training script does by default: special tokens added, no truncation, no padding."""
    ctx, lim = acc.ctx, acc.ctx.limits
    _null_rows(acc, plan.name, arr, row_offset)
    texts = arr.fill_null("").to_pylist() if arr.null_count else arr.to_pylist()
    encodings = ctx.tokenizer.encode_batch(texts, add_special_tokens=True)
    lengths = np.fromiter((len(e) for e in encodings), dtype=np.int64, count=len(encodings))
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    total = int(offsets[-1])
    need_ids = (lim.input_rows is not None and lim.tokenizer_max_id is not None
                and lim.tokenizer_max_id >= lim.input_rows) or (ctx.causal_lm and lim.eos_id is not None)
    lo = hi = None
    if need_ids:  # only when an id can be out of range: extracting ids costs more than counting them
        values = np.fromiter(itertools.chain.from_iterable(e.ids for e in encodings), dtype=np.int64, count=total)
        if lim.input_rows is not None:
            acc.add(plan.name, ID_TOO_LARGE,
                    violation(values >= lim.input_rows, values, offsets, row_offset, ctx.max_locations))
        if ctx.causal_lm and lim.eos_id is not None:
            acc.add(plan.name, EOS_MASKED,
                    violation(values == lim.eos_id, values, offsets, row_offset, ctx.max_locations))
        lo, hi = _minmax(values)
    _length_checks(acc, plan.name, lengths, row_offset)
    acc.stat(plan.name, ColumnStats(len(arr), len(arr) - arr.null_count, arr.null_count, lo, hi,
                                    int(lengths.max()) if lengths.size else None, tokens=total,
                                    length_hist=histogram(lengths, _position_limit(acc.ctx.limits))
                                    if acc.ctx.histograms else None))


def _input_ids_column(ctx: ScanContext) -> str | None:
    return next((p.name for p in ctx.columns if p.role == INPUT_IDS), None)


def _length_alignment(acc: _Acc, column: str, offsets: np.ndarray, ids_column: str | None, batch: pa.Table,
                      row_offset: int) -> None:
    """Rows whose per-token labels are not as long as their input_ids (labels not truncated with the inputs).

    The violation's value is ``"<labels length>/<input_ids length>"``."""
    if not ids_column or ids_column not in batch.column_names:
        return
    ids_arr = _as_array(batch.column(ids_column))
    if not is_list(ids_arr.type):
        return
    label_lengths = np.diff(offsets)
    ids_lengths = pc.list_value_length(ids_arr).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    mask = label_lengths != ids_lengths
    if not mask.any():
        return
    pairs = np.empty(len(mask), dtype=object)  # strings only for the offending rows
    bad = np.flatnonzero(mask)
    pairs[bad] = [f"{a}/{b}" for a, b in zip(label_lengths[bad].tolist(), ids_lengths[bad].tolist())]
    acc.add(column, LENGTH_MISMATCH, row_violation(mask, pairs, row_offset, acc.ctx.max_locations))


def _class_label_column(acc: _Acc, plan: ColumnPlan, arr: pa.Array, row_offset: int,
                        batch: pa.Table | None = None) -> None:
    ctx, lim = acc.ctx, acc.ctx.limits
    _null_rows(acc, plan.name, arr, row_offset)
    if is_list(arr.type):  # token classification: one label per token
        values, offsets, _, _ = flat_sequences(arr)
        if batch is not None:
            _length_alignment(acc, plan.name, offsets, _input_ids_column(ctx), batch, row_offset)
        rows = np.repeat(np.arange(len(arr), dtype=np.int64), np.diff(offsets))
        positions: np.ndarray | None = np.arange(values.size, dtype=np.int64) - offsets[rows]
        valid = np.ones(values.size, dtype=bool)
    elif pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
        _string_labels(acc, plan, arr, row_offset)
        return
    else:
        values, valid = _scalars(arr)
        offsets, positions = None, None
        rows = np.arange(len(arr), dtype=np.int64)
    if values.dtype.kind == "f":
        values = values.astype(np.int64)  # roles.py admits only integral floats here
    if lim.num_labels is not None:
        bad = ((values < -1) | (values >= lim.num_labels)) & (values != IGNORE_INDEX) & valid
        acc.add(plan.name, LABEL_OUT_OF_RANGE, violation(bad, values, offsets, row_offset, ctx.max_locations))
    acc.add(plan.name, LABEL_MINUS_ONE, violation((values == -1) & valid, values, offsets, row_offset,
                                                  ctx.max_locations))
    if not valid.all():
        values, rows = values[valid], rows[valid]
    lo, hi = _minmax(values)
    uniq = _uniques(values, rows, positions, row_offset)
    acc.stat(plan.name, ColumnStats(len(arr), int(values.size), arr.null_count, lo, hi, None,
                                    uniques=uniq, uniques_capped=not uniq and values.size > 0))


def _string_labels(acc: _Acc, plan: ColumnPlan, arr: pa.Array, row_offset: int) -> None:
    valid = arr.is_valid().to_numpy(zero_copy_only=False)
    rows = np.flatnonzero(valid)
    encoded = (arr.drop_null() if arr.null_count else arr).dictionary_encode()
    idx = encoded.indices.to_numpy(zero_copy_only=False)
    names = encoded.dictionary.to_pylist()
    uniq = _uniques(idx, rows, None, row_offset)
    uniques = {names[k]: v for k, v in uniq.items()}
    acc.stat(plan.name, ColumnStats(len(arr), int(idx.size), arr.null_count, None, None, None,
                                    uniques=uniques, uniques_capped=not uniq and idx.size > 0))


def _lm_label_column(acc: _Acc, plan: ColumnPlan, arr: pa.Array, row_offset: int, batch: pa.Table) -> None:
    lim, n = acc.ctx.limits, acc.ctx.max_locations
    _null_rows(acc, plan.name, arr, row_offset)
    values, offsets, null_rows, _ = flat_sequences(arr)
    bad = (values < 0) & (values != IGNORE_INDEX)
    if lim.output_rows is not None:
        bad |= values >= lim.output_rows
    acc.add(plan.name, LM_LABEL_TOO_LARGE, violation(bad, values, offsets, row_offset, n))
    kept = np.zeros(values.size + 1, dtype=np.int64)
    np.cumsum(values != IGNORE_INDEX, out=kept[1:])
    per_row = kept[offsets[1:]] - kept[offsets[:-1]]
    acc.add(plan.name, ALL_MASKED, row_violation(per_row == 0, np.diff(offsets), row_offset, n))
    if acc.ctx.causal_lm:  # a seq2seq model's labels are decoder targets of their own length
        _length_alignment(acc, plan.name, offsets, plan.input_ids_column, batch, row_offset)
    if lim.eos_id is not None and plan.input_ids_column and plan.input_ids_column in batch.column_names:
        ids_arr = _as_array(batch.column(plan.input_ids_column))
        if is_list(ids_arr.type):
            ids, id_offsets, _, _ = flat_sequences(ids_arr)
            if np.array_equal(id_offsets, offsets):  # aligned, as causal-LM labels are
                mask = (ids == lim.eos_id) & (values == IGNORE_INDEX)
                acc.add(plan.name, EOS_MASKED, violation(mask, ids, offsets, row_offset, n))
    shown = values[values != IGNORE_INDEX]
    lo, hi = _minmax(shown)
    lengths = np.diff(offsets)
    acc.stat(plan.name, ColumnStats(len(arr), int(values.size), null_rows, lo, hi,
                                    int(lengths.max()) if lengths.size else None))


def summarize(batch: pa.Table | pa.RecordBatch, row_offset: int, ctx: ScanContext) -> Summary:
    """Everything the dataset rules need from one batch whose first row is ``row_offset`` in its split."""
    acc = _Acc(ctx)
    for plan in ctx.columns:
        if plan.name not in batch.column_names:
            continue
        arr = _as_array(batch.column(plan.name))
        if plan.role in ID_ROLES:
            _id_column(acc, plan, arr, row_offset, batch)
        elif plan.role == TEXT:
            _text_column(acc, plan, arr, row_offset)
        elif plan.role == CLASS_LABEL:
            _class_label_column(acc, plan, arr, row_offset, batch)
        elif plan.role == LM_LABELS:
            _lm_label_column(acc, plan, arr, row_offset, batch)
    return Summary({(ctx.source, ctx.split): batch.num_rows}, acc.stats, acc.violations)
