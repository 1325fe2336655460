"""Per-row indicators of one embedding matrix, in one streaming pass plus exact re-reads of the few
candidate rows: L2 norm, all-zero rows, bitwise-duplicate rows, rows equal to the mean of the others.

max |value| is not taken in the pass (it would cost a third of it): a row whose norm is above
``ZERO_MAX_ABS * sqrt(cols)`` cannot be all zero, so only the rows under it are re-read to decide, and
the rows a report shows get theirs from ``max_abs_of``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..io.rows import RowReader
from .median import median
from .rowpass import row_words, run_pass

# A row whose every |value| is at most this is zero (unsloth's untrained-token test).
ZERO_MAX_ABS = 1e-16
# A row is "the mean" when ||row - mean|| <= MEAN_REL * ||mean|| + MEAN_ABS * median row norm:
# transformers' mean resizing samples N(mean, 1e-9 * cov), and bf16 rounds the mean by ~2^-9.
MEAN_REL = 1e-2
MEAN_ABS = 1e-3


@dataclass(frozen=True)
class MatrixStats:
    """Indicators for every row of one matrix (padding rows included; callers pick token rows)."""

    tensor: str
    dtype: str
    rows: int
    cols: int
    norm: np.ndarray = field(repr=False)  # float64 L2 norm per row (squares summed in float32; float64 past 65536 columns)
    zero: np.ndarray = field(repr=False)  # bool: every |value| of the row is at most ZERO_MAX_ABS
    duplicate_of: np.ndarray = field(repr=False)  # int64: first row of its group of identical rows, else -1
    mean_like: np.ndarray = field(repr=False)  # bool: the row equals the mean of the non-zero rows
    mean_norm: float  # ||mean of the non-zero rows||  (mean_like also accepts the mean of all rows)
    median_norm: float  # median norm of the non-zero rows


def scan(reader: RowReader) -> MatrixStats:
    """One sequential pass for norms, keys and the column sum; then exact checks of the few candidate rows
    (a norm small enough to be zero, equal keys, a norm close to the mean's)."""
    n = reader.rows
    one = run_pass(reader)
    norm = one.norm
    zero = np.zeros(n, bool)
    # every |v| <= Z implies norm <= Z * sqrt(cols); 1% covers the float32 rounding of the squares' sum
    maybe = np.flatnonzero(norm <= ZERO_MAX_ABS * math.sqrt(reader.cols) * 1.01)
    zero[maybe] = max_abs_of(reader, maybe) <= ZERO_MAX_ABS
    nonzero = int((~zero).sum())
    mean = one.colsum / max(nonzero, 1)
    mean_norm = float(np.sqrt(mean @ mean))
    # transformers averages every old row, zero rows included: try both means.
    means = [mean, one.colsum / max(n, 1)] if nonzero < n else [mean]
    median_norm = median(norm[~zero]) if nonzero else 0.0
    return MatrixStats(
        tensor=reader.info.name,
        dtype=reader.info.dtype,
        rows=n,
        cols=reader.cols,
        norm=norm,
        zero=zero,
        duplicate_of=_duplicates(reader, one.keys, zero),
        mean_like=np.logical_or.reduce([_mean_like(reader, norm, zero, m, median_norm) for m in means]),
        mean_norm=mean_norm,
        median_norm=median_norm,
    )


def max_abs_of(reader: RowReader, ids: np.ndarray) -> np.ndarray:
    """The exact max |value| (float32) of the rows ``ids``, re-read from the file; NaN for a row holding NaN."""
    out = np.zeros(len(ids), np.float32)
    done = 0
    for part, _bits, x in reader.take(np.asarray(ids, np.int64)):
        out[done : done + len(part)] = np.abs(x).max(axis=1, initial=0)
        done += len(part)
    return out


def _duplicates(reader: RowReader, hashes: np.ndarray, zero: np.ndarray) -> np.ndarray:
    """For each non-zero row, the first row with the same bits (verified exactly), else -1."""
    out = np.full(len(hashes), -1, np.int64)
    ids = np.flatnonzero(~zero)
    if len(ids) < 2:
        return out
    keys = np.sort(hashes[ids])  # most matrices have no two equal rows: a plain sort says so, no argsort
    if not (keys[1:] == keys[:-1]).any():
        return out
    order = ids[np.argsort(hashes[ids], kind="stable")]
    h = hashes[order]
    same_as_prev = np.concatenate([[False], h[1:] == h[:-1]])
    in_group = same_as_prev | np.concatenate([h[:-1] == h[1:], [False]])
    if not in_group.any():
        return out
    group_start = np.maximum.accumulate(np.where(~same_as_prev, np.arange(len(order)), 0))
    first = order[group_start]  # smallest id of each hash group (stable sort keeps ids ascending)
    cand, cand_first = order[in_group], first[in_group]
    firsts = np.unique(cand_first)
    first_bits: dict[int, np.ndarray] = {}
    for part, bits, _x in reader.take(firsts):
        first_bits.update(zip(part.tolist(), row_words(bits)))
    step = reader.chunk_rows()
    for i in range(0, len(cand), step):
        part, firsts_part = cand[i : i + step], cand_first[i : i + step]
        words = row_words(np.asarray(reader.raw[part]))
        ref = np.stack([first_bits[f] for f in firsts_part.tolist()])
        equal = (words == ref).all(axis=1)
        out[part[equal]] = firsts_part[equal]
    out[out == np.arange(len(out))] = -1  # a group's first row: mark it only if another row matched
    matched_firsts = np.unique(out[out >= 0])
    out[matched_firsts] = matched_firsts
    return out


def _mean_like(reader: RowReader, norm: np.ndarray, zero: np.ndarray, mean: np.ndarray,
               median_norm: float) -> np.ndarray:
    """Rows within tolerance of ``mean``; by the triangle inequality only rows whose norm is close to
    ``||mean||`` can be, so only those are re-read."""
    out = np.zeros(len(norm), bool)
    mean_norm = float(np.sqrt(mean @ mean))
    tol = MEAN_REL * mean_norm + MEAN_ABS * median_norm
    cand = np.flatnonzero(~zero & (np.abs(norm - mean_norm) <= tol))
    if mean_norm == 0.0 or len(cand) == 0:
        return out
    for part, _bits, x in reader.take(cand):
        diff = x.astype(np.float64) - mean
        out[part] = np.sqrt(np.einsum("ij,ij->i", diff, diff)) <= tol
    return out
