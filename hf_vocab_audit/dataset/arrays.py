"""Arrow arrays as numpy: list columns flattened, scalars with their nulls, and the violations of a mask
(counts, top offending values and the first exact locations)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .summary import TOP_CAP, UNIQUE_CAP, Violation


def as_array(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    if isinstance(column, pa.ChunkedArray):
        return column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    return column


def is_list(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t) or (
        hasattr(pa.types, "is_list_view") and (pa.types.is_list_view(t) or pa.types.is_large_list_view(t))
    )


def is_integer_like(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_boolean(t)


def as_numpy(arr: pa.Array) -> np.ndarray:
    """The values of an integer or float array without nulls as a read-only numpy view of its buffer (no copy);
    other arrays through ``to_numpy``. ``Array.to_numpy`` imports pandas (0.3 s idle, over 1 s on a busy
    machine) on its first call, which a scan of pre-tokenized ids need not pay."""
    t = arr.type
    data = arr.buffers()[1] if arr.null_count == 0 and len(arr.buffers()) == 2 else None
    if data is not None and (pa.types.is_integer(t) or pa.types.is_floating(t)):
        kind = "f" if pa.types.is_floating(t) else ("i" if pa.types.is_signed_integer(t) else "u")
        dtype = np.dtype(f"{kind}{t.bit_width // 8}")
        return np.frombuffer(data, dtype=dtype, count=arr.offset + len(arr))[arr.offset:]
    return arr.to_numpy(zero_copy_only=False)


def flat_sequences(arr: pa.Array) -> tuple[np.ndarray, np.ndarray, int, int]:
    """(values, offsets, null rows, null values) of a list<int> array; offsets has len(arr) + 1 entries."""
    if (pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type)) and not arr.null_count:
        raw = as_numpy(arr.offsets)  # zero-copy view; rebased when the array is a slice
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
    values = as_numpy(flat)
    return values, offsets, arr.null_count, null_values


def row_lengths(arr: pa.Array) -> np.ndarray:
    """Values per row of a list array (0 for a null row), as int64: from the offsets when no row is null."""
    if (pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type)) and not arr.null_count:
        return np.diff(as_numpy(arr.offsets)).astype(np.int64, copy=False)
    return pc.list_value_length(arr).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)


def scalars(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
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


def unique_counts(values: np.ndarray, rows: np.ndarray, positions: np.ndarray | None, row_offset: int) -> dict:
    uniq, first, counts = np.unique(values, return_index=True, return_counts=True)
    if uniq.size > UNIQUE_CAP:
        return {}
    return {
        _py(u): (int(c), int(rows[i]) + row_offset, None if positions is None else int(positions[i]))
        for u, i, c in zip(uniq, first, counts)
    }


MINMAX_ONE_PASS = 1 << 14  # integer arrays at least this long: Arrow's min_max (one pass) over numpy's two


def minmax(values: np.ndarray) -> tuple[Any, Any]:
    """(min, max) as Python values, (None, None) when empty. Integer arrays of any size are reduced in one
    pass by ``pyarrow.compute.min_max`` over a zero-copy view: half the memory traffic of ``min()`` and
    ``max()``, which is what a pre-tokenized scan is bound by; the same values either way."""
    if values.size == 0:
        return None, None
    if values.dtype.kind in "iu" and values.size >= MINMAX_ONE_PASS and values.flags.c_contiguous:
        view = pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), values.size, [None, pa.py_buffer(values)])
        found = pc.min_max(view).as_py()  # from_buffers, not pa.array: that imports pandas
        return found["min"], found["max"]
    return _py(values.min()), _py(values.max())
