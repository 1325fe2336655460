"""The scan kernel: ``summarize(batch, row_offset, context) -> Summary`` (its merge is in :mod:`.summary`).

Pure functions over one Arrow batch (vectorised with numpy; no per-token Python loops, no global
state), so the same kernel and merge run in a local loop or on a distributed engine. A summary holds
counts, min/max, capped unique-value counts and the first offending locations of each check, ordered
by (row, position) so merging in any order gives the same answer.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..facts.limits import InputLimits, LabelKind
from ..facts.tokenizer.bounded_calls import MAX_TEXT_CHARS, library_call
from ..io.jsonlines import BadLines
from .arrays import (
    as_array,
    flat_sequences,
    is_integer_like,
    is_list,
    minmax,
    row_lengths,
    row_violation,
    scalars,
    unique_counts,
    violation,
)
from .checks import (  # noqa: F401 - re-exported names the rules read
    ALL_MASKED,
    ATTENTION_MASK,
    BEYOND_ROTARY,
    CHOICE_LABEL,
    CHOICE_OUT_OF_RANGE,
    CLASS_LABEL,
    CTC_LABEL_TOO_LARGE,
    CTC_LABELS,
    EOS_MASKED,
    ID_ROLES,
    ID_TOO_LARGE,
    IGNORE_INDEX,
    INPUT_IDS,
    LABEL_MINUS_ONE,
    LABEL_OUT_OF_RANGE,
    LABEL_VECTOR,
    LABEL_VECTOR_INTEGER,
    LABEL_VECTOR_LENGTH,
    LABEL_VECTOR_OUTSIDE,
    LENGTH_MISMATCH,
    LM_LABEL_TOO_LARGE,
    LM_LABELS,
    NEGATIVE,
    NULL,
    POSITION_IDS,
    POSITION_TOO_LARGE,
    READ_STOPPED,
    TEXT,
    TEXT_TOO_LONG,
    TOKEN_TYPE_IDS,
    TOO_LONG,
    TYPE_TOO_LARGE,
    UNREADABLE_LINE,
    WATCHED,
)
from .summary import (
    ColumnRole,
    ColumnStats,
    Key,
    ScanContext,
    Summary,
    Violation,
    histogram,
    merge_violation,
)

# The check an id column's role fails when a value reaches its bound (InputLimits.bound).
TOO_LARGE = {INPUT_IDS: ID_TOO_LARGE, TOKEN_TYPE_IDS: TYPE_TOO_LARGE, POSITION_IDS: POSITION_TOO_LARGE}


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
    acc: _Acc, plan: ColumnRole, values: np.ndarray, offsets: np.ndarray, row_offset: int
) -> tuple[np.ndarray, Any, Any]:
    """Range and length checks of an id sequence column; returns the row lengths, min and max."""
    lim, n = acc.ctx.limits, acc.ctx.max_locations
    lengths = np.diff(offsets)
    lo, hi = minmax(values)  # two passes; the range checks below run only when min/max say they can fire
    if plan.role in ID_ROLES and lo is not None and lo < 0:
        acc.add(plan.name, NEGATIVE, violation(values < 0, values, offsets, row_offset, n))
    bound = lim.bound(plan.role) if plan.role in TOO_LARGE else None  # negatives are NEGATIVE's, above
    if hi is not None and bound is not None and hi >= bound.below:
        acc.add(plan.name, TOO_LARGE[plan.role], violation(values >= bound.below, values, offsets, row_offset, n))
    if plan.role in (INPUT_IDS, TEXT):
        _length_checks(acc, plan.name, lengths, row_offset)
    return lengths, lo, hi


def _watched(acc: _Acc, column: str, values: np.ndarray, offsets: np.ndarray, row_offset: int) -> None:
    """The uses of the ids the scan was told to watch: one lookup table per batch, however many ids."""
    watch = acc.ctx.watch
    if watch and values.size and values.dtype.kind in "iu":
        mask = np.isin(values, np.asarray(watch, dtype=np.int64), kind="table")
        acc.add(column, WATCHED, violation(mask, values, offsets, row_offset, acc.ctx.max_locations))


def _position_limit(lim: InputLimits) -> int | None:
    return lim.positions if lim.positions is not None else lim.rotary_positions


def _histograms(acc: _Acc, plan: ColumnRole, values: np.ndarray, lengths: np.ndarray, lo: Any) -> dict[str, Any]:
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
    if arr.null_count:  # rows only, no values: None cannot be sorted to count them (two null rows crashed)
        mask = arr.is_null().to_numpy(zero_copy_only=False)
        acc.add(column, NULL, violation(mask, None, None, row_offset, acc.ctx.max_locations))


def _nested_id_column(acc: _Acc, plan: ColumnRole, arr: pa.Array, row_offset: int) -> None:
    """Multiple choice: a list of choices per row, a list of ids per choice; the head reads them as
    ``view(-1, length)`` (every choice a sequence). Locations are (row, index into the row's choices laid end
    to end); lengths are the row's longest choice."""
    _null_rows(acc, plan.name, arr, row_offset)
    choices = arr.flatten()  # one list of ids per choice
    values, inner, _, _ = flat_sequences(choices)
    outer = np.zeros(len(arr) + 1, dtype=np.int64)
    np.cumsum(row_lengths(arr), out=outer[1:])
    offsets = inner[outer]  # each row's first and last value in the flat ids
    lim, n = acc.ctx.limits, acc.ctx.max_locations
    lo, hi = minmax(values)
    if lo is not None and lo < 0:
        acc.add(plan.name, NEGATIVE, violation(values < 0, values, offsets, row_offset, n))
    bound = lim.bound(plan.role) if plan.role in TOO_LARGE else None
    if hi is not None and bound is not None and hi >= bound.below:
        acc.add(plan.name, TOO_LARGE[plan.role], violation(values >= bound.below, values, offsets, row_offset, n))
    choice_lengths = np.diff(inner)
    lengths = np.zeros(len(arr), dtype=np.int64)
    full = np.flatnonzero(np.diff(outer) > 0)
    if full.size:
        lengths[full] = np.maximum.reduceat(choice_lengths, outer[full])
    if plan.role == INPUT_IDS:
        _length_checks(acc, plan.name, lengths, row_offset)
    acc.stat(plan.name, ColumnStats(len(arr), int(values.size), arr.null_count, lo, hi,
                                    int(lengths.max()) if lengths.size else None))


def _id_column(acc: _Acc, plan: ColumnRole, arr: pa.Array, row_offset: int, batch: pa.Table) -> None:
    if plan.nested and is_list(arr.type) and is_list(arr.type.value_type):
        _nested_id_column(acc, plan, arr, row_offset)
        return
    if is_list(arr.type):
        values, offsets, null_rows, _ = flat_sequences(arr)
        _null_rows(acc, plan.name, arr, row_offset)
        lengths, lo, hi = _sequence_checks(acc, plan, values, offsets, row_offset)
        hists = _histograms(acc, plan, values, lengths, lo)
        if plan.role == INPUT_IDS:
            _watched(acc, plan.name, values, offsets, row_offset)
        acc.stat(plan.name, ColumnStats(len(arr), int(values.size), null_rows, lo, hi,
                                        int(lengths.max()) if lengths.size else None, **hists))
        if (plan.role == INPUT_IDS and acc.ctx.causal_lm and acc.ctx.limits.eos_id is not None
                and not any(p.role == LM_LABELS and p.input_ids_column == plan.name for p in acc.ctx.columns)):
            acc.add(plan.name, EOS_MASKED, violation(values == acc.ctx.limits.eos_id, values, offsets,
                                                         row_offset, acc.ctx.max_locations))
        return
    values, valid = scalars(arr)  # one id per row (e.g. a single-token column)
    _null_rows(acc, plan.name, arr, row_offset)
    offsets = np.arange(len(values) + 1, dtype=np.int64)
    lim, n = acc.ctx.limits, acc.ctx.max_locations
    acc.add(plan.name, NEGATIVE, violation((values < 0) & valid, values, None, row_offset, n))
    bound = lim.bound(plan.role) if plan.role in (INPUT_IDS, TOKEN_TYPE_IDS) else None
    if bound is not None:
        acc.add(plan.name, TOO_LARGE[plan.role],
                violation((values >= bound.below) & valid, values, None, row_offset, n))
    lo, hi = minmax(values[valid])
    acc.stat(plan.name, ColumnStats(len(arr), int(valid.sum()), arr.null_count, lo, hi, 1 if len(arr) else None))
    del offsets


def _encode(tokenizer: Any, texts: list[str]) -> Any:
    """The encodings of ``texts``, without the character offsets the scan never reads when the installed
    ``tokenizers`` can skip them (``encode_batch_fast``, 0.20+: the same ids, about 1.2x faster)."""
    fast = getattr(tokenizer, "encode_batch_fast", None)
    if fast is not None:
        return fast(texts, add_special_tokens=True)
    return tokenizer.encode_batch(texts, add_special_tokens=True)


def _byte_lengths(arr: pa.Array) -> np.ndarray:
    """UTF-8 bytes per row of a string array (0 for nulls), from its offsets buffer: no compute kernel
    (``pyarrow.compute`` calls import pandas, 0.15 s, to check their arguments)."""
    offsets_buffer = arr.buffers()[1]
    if offsets_buffer is None or len(arr) == 0:
        return np.zeros(len(arr), np.int64)
    dtype = np.int64 if pa.types.is_large_string(arr.type) else np.int32
    offsets = np.frombuffer(offsets_buffer, dtype=dtype)[arr.offset : arr.offset + len(arr) + 1]
    return np.diff(offsets).astype(np.int64)


def _text_column(acc: _Acc, plan: ColumnRole, arr: pa.Array, row_offset: int) -> None:
    """Tokenize as a training script does by default: special tokens added, no truncation, no padding."""
    ctx, lim = acc.ctx, acc.ctx.limits
    _null_rows(acc, plan.name, arr, row_offset)
    too_long = _byte_lengths(arr) > MAX_TEXT_CHARS  # a character takes at least one byte: a cheap bound
    if too_long.any():  # never hand the library unbounded work (one 32 MB word aborts it)
        chars = pc.utf8_length(arr).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        too_long = chars > MAX_TEXT_CHARS
    if too_long.any():
        acc.add(plan.name, TEXT_TOO_LONG, row_violation(too_long, chars, row_offset, ctx.max_locations))
        arr = pc.if_else(pa.array(too_long), pa.scalar("", arr.type), arr)
    texts = arr.fill_null("").to_pylist() if arr.null_count else arr.to_pylist()
    with library_call(ctx.tokenizer_file or ctx.source, "the tokenizers library failed on a row"):
        encodings = _encode(ctx.tokenizer, texts)
    # TRL 1.16's SFTTrainer tokenizes a text column as this does: trl/data_utils.py ``_tokenize`` calls
    # ``processing_class(text=...)``, special tokens added, so a text rendered with the template's BOS gets two (HVA557)
    if ctx.causal_lm:
        from .chat_content import double_bos_texts
        from .checks import DOUBLE_BOS

        doubled, bos_id = double_bos_texts(ctx.tokenizer, texts, encodings)
        if doubled.any():
            acc.add(plan.name, DOUBLE_BOS, row_violation(doubled, np.full(len(texts), bos_id, dtype=np.int64),
                                                         row_offset, ctx.max_locations, position=1))
    lengths = np.fromiter((len(e) for e in encodings), dtype=np.int64, count=len(encodings))
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    total = int(offsets[-1])
    bound = lim.bound(INPUT_IDS)
    need_ids = (bound is not None and lim.tokenizer_max_id is not None
                and lim.tokenizer_max_id >= bound.below) or (ctx.causal_lm and lim.eos_id is not None)
    lo = hi = None
    if need_ids or ctx.watch:  # only when a check reads them: extracting ids costs more than counting them
        values = np.fromiter(itertools.chain.from_iterable(e.ids for e in encodings), dtype=np.int64, count=total)
        if bound is not None:
            acc.add(plan.name, ID_TOO_LARGE,
                    violation(values >= bound.below, values, offsets, row_offset, ctx.max_locations))
        if ctx.causal_lm and lim.eos_id is not None:
            acc.add(plan.name, EOS_MASKED,
                    violation(values == lim.eos_id, values, offsets, row_offset, ctx.max_locations))
        _watched(acc, plan.name, values, offsets, row_offset)
        lo, hi = minmax(values)
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
    ids_arr = as_array(batch.column(ids_column))
    if not is_list(ids_arr.type):
        return
    label_lengths = np.diff(offsets)
    ids_lengths = row_lengths(ids_arr)
    mask = label_lengths != ids_lengths
    if not mask.any():
        return
    pairs = np.empty(len(mask), dtype=object)  # strings only for the offending rows
    bad = np.flatnonzero(mask)
    pairs[bad] = [f"{a}/{b}" for a, b in zip(label_lengths[bad].tolist(), ids_lengths[bad].tolist())]
    acc.add(column, LENGTH_MISMATCH, row_violation(mask, pairs, row_offset, acc.ctx.max_locations))


def _class_label_column(acc: _Acc, plan: ColumnRole, arr: pa.Array, row_offset: int,
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
        values, valid = scalars(arr)
        offsets, positions = None, None
        rows = np.arange(len(arr), dtype=np.int64)
    if values.dtype.kind == "f":
        values = values.astype(np.int64)  # roles.py admits only integral floats here
    bound = lim.label_bound(LabelKind.TOKEN_CLASSES if offsets is not None else LabelKind.CLASSES)
    if bound is not None:  # -1 has its own check (LABEL_MINUS_ONE)
        bad = bound.bad(values) & (values != -1) & valid
        acc.add(plan.name, LABEL_OUT_OF_RANGE, violation(bad, values, offsets, row_offset, ctx.max_locations))
    acc.add(plan.name, LABEL_MINUS_ONE, violation((values == -1) & valid, values, offsets, row_offset,
                                                  ctx.max_locations))
    if not valid.all():
        values, rows = values[valid], rows[valid]
    lo, hi = minmax(values)
    uniq = unique_counts(values, rows, positions, row_offset)
    acc.stat(plan.name, ColumnStats(len(arr), int(values.size), arr.null_count, lo, hi, None,
                                    uniques=uniq, uniques_capped=not uniq and values.size > 0))


def _string_labels(acc: _Acc, plan: ColumnRole, arr: pa.Array, row_offset: int) -> None:
    valid = arr.is_valid().to_numpy(zero_copy_only=False)
    rows = np.flatnonzero(valid)
    encoded = (arr.drop_null() if arr.null_count else arr).dictionary_encode()
    idx = encoded.indices.to_numpy(zero_copy_only=False)
    names = encoded.dictionary.to_pylist()
    uniq = unique_counts(idx, rows, None, row_offset)
    uniques = {names[k]: v for k, v in uniq.items()}
    acc.stat(plan.name, ColumnStats(len(arr), int(idx.size), arr.null_count, None, None, None,
                                    uniques=uniques, uniques_capped=not uniq and idx.size > 0))


def _lm_label_bounds(values: np.ndarray, offsets: np.ndarray, lim: InputLimits) -> tuple[Any, Any, np.ndarray] | None:
    """The stats and all-masked rows of a labels batch proved clean from its bounds, or None when a range check
    could fire (or the eos check needs every value): then the batch takes the element-wise path.

    Two one-pass reductions instead of a mask per check: the signed min/max, and, when -100 is present, the
    min/max of the same bits read as unsigned. Signed min == -100 and unsigned max == the bits of -100 prove
    every negative label is -100 (any of -99..-1 reads larger as unsigned, anything below -100 lowers the
    signed min); the unsigned min is then the smallest label that is not -100. A row is all masked when it
    is empty or its largest label is -100; its first and last labels rule most rows out without a pass."""
    if lim.eos_id is not None or values.dtype.kind not in "iu":
        return None
    lengths = np.diff(offsets)
    empty = lengths == 0
    lo, hi = minmax(values)
    if lo is None:
        return None, None, empty
    bound = lim.label_bound(LabelKind.LM)
    if bound is not None and hi >= bound.below:
        return None
    if lo >= 0:
        return lo, hi, empty
    if lo != IGNORE_INDEX:
        return None
    bits = values.dtype.itemsize * 8
    ulo, uhi = minmax(values.view(f"u{values.dtype.itemsize}"))
    if uhi != (1 << bits) + IGNORE_INDEX:
        return None
    shown = (ulo if ulo < 1 << (bits - 1) else None), (hi if hi >= 0 else None)
    rows = np.flatnonzero(~empty)
    if rows.size:
        starts = offsets[rows]
        suspect = (values[starts] == IGNORE_INDEX) & (values[offsets[rows + 1] - 1] == IGNORE_INDEX)
        if suspect.any():  # segments between non-empty rows' starts are exactly those rows
            empty = empty.copy()
            empty[rows] = np.maximum.reduceat(values, starts) == IGNORE_INDEX
    return shown[0], shown[1], empty


def _lm_label_column(acc: _Acc, plan: ColumnRole, arr: pa.Array, row_offset: int, batch: pa.Table) -> None:
    lim, n = acc.ctx.limits, acc.ctx.max_locations
    _null_rows(acc, plan.name, arr, row_offset)
    values, offsets, null_rows, _ = flat_sequences(arr)
    proved = _lm_label_bounds(values, offsets, lim)
    if proved is not None:
        lo, hi, all_masked = proved
        lengths = np.diff(offsets)
        acc.add(plan.name, ALL_MASKED, row_violation(all_masked, lengths, row_offset, n))
        if acc.ctx.causal_lm:
            _length_alignment(acc, plan.name, offsets, plan.input_ids_column, batch, row_offset)
        acc.stat(plan.name, ColumnStats(len(arr), int(values.size), null_rows, lo, hi,
                                        int(lengths.max()) if lengths.size else None))
        return
    bound = lim.label_bound(LabelKind.LM)
    bad = bound.bad(values) if bound is not None else (values < 0) & (values != IGNORE_INDEX)
    acc.add(plan.name, LM_LABEL_TOO_LARGE, violation(bad, values, offsets, row_offset, n))
    kept = np.zeros(values.size + 1, dtype=np.int64)
    np.cumsum(values != IGNORE_INDEX, out=kept[1:])
    per_row = kept[offsets[1:]] - kept[offsets[:-1]]
    acc.add(plan.name, ALL_MASKED, row_violation(per_row == 0, np.diff(offsets), row_offset, n))
    if acc.ctx.causal_lm:  # a seq2seq model's labels are decoder targets of their own length
        _length_alignment(acc, plan.name, offsets, plan.input_ids_column, batch, row_offset)
    if lim.eos_id is not None and plan.input_ids_column and plan.input_ids_column in batch.column_names:
        ids_arr = as_array(batch.column(plan.input_ids_column))
        if is_list(ids_arr.type):
            ids, id_offsets, _, _ = flat_sequences(ids_arr)
            if np.array_equal(id_offsets, offsets):  # aligned, as causal-LM labels are
                mask = (ids == lim.eos_id) & (values == IGNORE_INDEX)
                acc.add(plan.name, EOS_MASKED, violation(mask, ids, offsets, row_offset, n))
    shown = values[values != IGNORE_INDEX]
    lo, hi = minmax(shown)
    lengths = np.diff(offsets)
    acc.stat(plan.name, ColumnStats(len(arr), int(values.size), null_rows, lo, hi,
                                    int(lengths.max()) if lengths.size else None))


def _label_vector_column(acc: _Acc, plan: ColumnRole, arr: pa.Array, row_offset: int) -> None:
    """Multi-label targets: BCEWithLogitsLoss needs num_labels values per row (another length raises
    ``Target size ... must be the same as input size``); the values themselves have no range. A scalar per
    row is a vector of one."""
    lim = acc.ctx.limits
    _null_rows(acc, plan.name, arr, row_offset)
    valid = arr.is_valid().to_numpy(zero_copy_only=False) if arr.null_count else np.ones(len(arr), dtype=bool)
    if is_list(arr.type):
        lengths = row_lengths(arr)
        values = int(lengths.sum())
    else:
        lengths = np.ones(len(arr), dtype=np.int64)
        values = int(valid.sum())
    multi_label = lim.label_kind == LabelKind.MULTI_LABEL  # else a sequence classifier given integer lists
    if lim.num_labels is not None and multi_label:
        acc.add(plan.name, LABEL_VECTOR_LENGTH,
                row_violation((lengths != lim.num_labels) & valid, lengths, row_offset, acc.ctx.max_locations))
    if is_list(arr.type) and (is_integer_like(arr.type.value_type) or pa.types.is_floating(arr.type.value_type)):
        flat, offsets, _, _ = flat_sequences(arr)
        if is_integer_like(arr.type.value_type):
            # every collator but one (default_data_collator's singular `label`) makes an int64 tensor of it,
            # and BCEWithLogitsLoss raises on that: each non-empty row is a row that fails
            # (cross entropy over a list of one class id per row runs: only wider rows fail that way)
            failing = (lengths > 0) if multi_label else (lengths > 1)
            acc.add(plan.name, LABEL_VECTOR_INTEGER,
                    row_violation(failing & valid, lengths, row_offset, acc.ctx.max_locations))
        if multi_label:  # a target outside 0..1 is no probability: the loss runs and has no minimum (NaN left alone)
            acc.add(plan.name, LABEL_VECTOR_OUTSIDE,
                    violation((flat < 0) | (flat > 1), flat, offsets, row_offset, acc.ctx.max_locations))
    lo, hi = minmax(lengths[valid])
    acc.stat(plan.name, ColumnStats(len(arr), values, arr.null_count, None, None, hi if lo is not None else None))


def _choice_label_column(acc: _Acc, plan: ColumnRole, arr: pa.Array, row_offset: int, batch: pa.Table) -> None:
    """Multiple choice: the label indexes the row's choices (the ignore index skipped); the choices are the
    outer lists of the row's nested input_ids, as the head reads them."""
    ctx, lim = acc.ctx, acc.ctx.limits
    _null_rows(acc, plan.name, arr, row_offset)
    values, valid = scalars(arr)
    column = plan.input_ids_column
    if column and column in batch.column_names:
        ids = as_array(batch.column(column))
        if is_list(ids.type) and is_list(ids.type.value_type):
            choices = row_lengths(ids)
            bad = ((values < 0) | (values >= choices)) & (values != lim.ignore_index) & valid
            acc.add(plan.name, CHOICE_OUT_OF_RANGE, violation(bad, values, None, row_offset, ctx.max_locations))
    kept = values[valid]
    lo, hi = minmax(kept)
    acc.stat(plan.name, ColumnStats(len(arr), int(kept.size), arr.null_count, lo, hi, None))


def _ctc_label_column(acc: _Acc, plan: ColumnRole, arr: pa.Array, row_offset: int) -> None:
    """CTC targets: the loss masks every negative (padding); a value >= the CTC head's rows raises ValueError."""
    ctx, lim = acc.ctx, acc.ctx.limits
    _null_rows(acc, plan.name, arr, row_offset)
    values, offsets, null_rows, _ = flat_sequences(arr)
    bound = lim.label_bound(LabelKind.CTC)
    lo, hi = minmax(values)
    if bound is not None and hi is not None and hi >= bound.below:
        acc.add(plan.name, CTC_LABEL_TOO_LARGE, violation(bound.bad(values), values, offsets, row_offset,
                                                          ctx.max_locations))
    lengths = np.diff(offsets)
    acc.stat(plan.name, ColumnStats(len(arr), int(values.size), null_rows, lo, hi,
                                    int(lengths.max()) if lengths.size else None))


def summarize(batch: pa.Table | pa.RecordBatch, row_offset: int, ctx: ScanContext) -> Summary:
    """Everything the dataset rules need from one batch whose first row is ``row_offset`` in its split."""
    acc = _Acc(ctx)
    for plan in ctx.columns:
        if plan.name not in batch.column_names:
            continue
        arr = as_array(batch.column(plan.name))
        if plan.role in ID_ROLES:
            _id_column(acc, plan, arr, row_offset, batch)
        elif plan.role == TEXT:
            _text_column(acc, plan, arr, row_offset)
        elif plan.role == CLASS_LABEL:
            _class_label_column(acc, plan, arr, row_offset, batch)
        elif plan.role == LM_LABELS:
            _lm_label_column(acc, plan, arr, row_offset, batch)
        elif plan.role == LABEL_VECTOR:
            _label_vector_column(acc, plan, arr, row_offset)
        elif plan.role == CHOICE_LABEL:
            _choice_label_column(acc, plan, arr, row_offset, batch)
        elif plan.role == CTC_LABELS:
            _ctc_label_column(acc, plan, arr, row_offset)
    return Summary({(ctx.source, ctx.split): batch.num_rows}, acc.stats, acc.violations)


def bad_lines_summary(bad: BadLines, ctx: ScanContext) -> Summary:
    """The lines of a JSON Lines file the reader skipped, as a violation of the split whose locations are
    (line, None, the parser's message); where the reader gave up after too many, a READ_STOPPED violation
    holds the line it stopped at."""
    source, split = ctx.source, ctx.split
    locations = tuple((line, None, message) for line, message in bad.lines[:ctx.max_locations])
    violations = {(source, split, "", UNREADABLE_LINE): Violation(len(bad.lines), len(bad.lines), locations, None)}
    if bad.stopped is not None:
        violations[(source, split, "", READ_STOPPED)] = Violation(1, 1, ((bad.stopped, None, None),), None)
    return Summary({(ctx.source, ctx.split): 0}, violations=violations)
