"""Per-row indicators of one embedding matrix, in one streaming pass plus exact re-reads of the few
candidate rows: L2 norm, max |value|, bitwise-duplicate rows, rows equal to the mean of the others."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from ..io.rows import RowReader

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
    norm: np.ndarray = field(repr=False)  # float64 L2 norm per row
    max_abs: np.ndarray = field(repr=False)  # float32 max |value| per row
    duplicate_of: np.ndarray = field(repr=False)  # int64: first row of its group of identical rows, else -1
    mean_like: np.ndarray = field(repr=False)  # bool: the row equals the mean of the non-zero rows
    mean_norm: float  # ||mean of the non-zero rows||  (mean_like also accepts the mean of all rows)
    median_norm: float  # median norm of the non-zero rows

    @property
    def zero(self) -> np.ndarray:
        return self.max_abs <= ZERO_MAX_ABS


def _row_words(bits: np.ndarray) -> np.ndarray:
    """Each row's bits as 64-bit words (zero-padded when the row is not a multiple of 8 bytes)."""
    u = np.asarray(bits).view(np.dtype(f"<u{bits.dtype.itemsize}"))
    nbytes = u.shape[1] * u.dtype.itemsize
    if nbytes % 8 == 0 and u.flags.c_contiguous:
        return u.view(np.uint64)
    return u.astype(np.uint64)


def _row_keys(bits: np.ndarray) -> np.ndarray:
    """A cheap 64-bit key per row (wrapping sum of its words): equal rows have equal keys; rows that
    share a key are compared bit for bit afterwards."""
    return _row_words(bits).sum(axis=1, dtype=np.uint64)


STRIPE_ROWS = 8192  # rows per unit of work: a thread's share, and one float64 partial column sum


def _workers() -> int:
    try:
        return max(1, min(4, len(os.sched_getaffinity(0))))
    except AttributeError:  # not on Linux
        return max(1, min(4, os.cpu_count() or 1))


class _Pass:
    """The one streaming pass: per-row norm, max |v| and key, and per-stripe column sums.

    Stripes of STRIPE_ROWS rows are independent (each writes its own slices and its own partial sum),
    so threads can take them in any order and the result does not depend on how many threads ran:
    reads and numpy's kernels release the GIL, so a second core helps where it is free (chunks are
    small for the cache, so each GIL hand-over costs: with busy cores two threads gain little)."""

    def __init__(self, reader: RowReader):
        n, d = reader.rows, reader.cols
        self.reader = reader
        self.norm = np.empty(n, np.float64)
        self.max_abs = np.empty(n, np.float32)
        self.hashes = np.empty(n, np.uint64)
        self.colsums = np.zeros((max(1, -(-n // STRIPE_ROWS)), d), np.float64)
        self.acc = np.float64 if d > 65536 else np.float32

    def stripe(self, index: int) -> None:
        lo, hi = index * STRIPE_ROWS, min(self.reader.rows, (index + 1) * STRIPE_ROWS)
        if self.reader.info.dtype == "BF16":
            self._bf16(index, lo, hi)
        else:
            self._floats(index, lo, hi)

    def _floats(self, index: int, lo: int, hi: int) -> None:
        """F16 and F32 rows, read from the memory map a cache-sized chunk at a time."""
        reader, d = self.reader, self.reader.cols
        step = min(reader.chunk_rows(), max(1, hi - lo))
        buf = np.empty((step, d), np.float32)
        partial = np.empty(d, np.float32)
        colsum = self.colsums[index]
        for start in range(lo, hi, step):
            stop = min(hi, start + step)
            bits = reader.raw[start:stop]
            x = reader.to_float(bits, buf[: stop - start])
            np.einsum("ij,ij->i", x, x, out=self.norm[start:stop], dtype=self.acc, casting="unsafe")
            self.max_abs[start:stop] = np.abs(x).max(axis=1, initial=0)
            self.hashes[start:stop] = _row_keys(bits)
            colsum += np.add.reduce(x, axis=0, out=partial)

    def _bf16(self, index: int, lo: int, hi: int) -> None:
        """bf16 rows, read (``preadv``: no mapping, no page faults) into one reused buffer that stays in L2
        with its float32 widening (one shift into a reused buffer: no temporaries), where every reduction
        reads it while it is hot. max |v| comes from two reductions of the bits and no temporary: as int16
        the largest non-negative value is the largest positive magnitude, as uint16 the largest value
        carries the largest negative magnitude."""
        reader, d = self.reader, self.reader.cols
        step = min(2 * reader.chunk_rows(), max(1, hi - lo))
        raw = np.empty((step, d), np.uint16)
        floats = np.empty((step, d), np.float32)
        ones = np.ones(step, np.float32)
        part = np.empty(d, np.float32)
        colsum = self.colsums[index]
        with open(reader.path, "rb", buffering=0) as fh:
            for start in range(lo, hi, step):
                stop = min(hi, start + step)
                k = stop - start
                bits = raw[:k]
                reader.read_into(fh, start, bits, 2 * d)
                x = floats[:k]
                np.left_shift(bits, 16, out=x.view(np.uint32), dtype=np.uint32)  # bf16 -> float32, exactly
                np.einsum("ij,ij->i", x, x, out=self.norm[start:stop], dtype=self.acc, casting="unsafe")
                negative = np.bitwise_and(bits.max(axis=1, initial=0), np.uint16(0x7FFF))
                top = np.maximum(negative, bits.view(np.int16).max(axis=1, initial=0).view(np.uint16))
                self.max_abs[start:stop] = np.left_shift(top, 16, dtype=np.uint32).view(np.float32)
                self.hashes[start:stop] = _row_keys(bits)
                colsum += np.dot(ones[:k], x, out=part)

    def run(self) -> None:
        stripes = range(len(self.colsums))
        workers = min(_workers(), len(stripes))
        if workers <= 1 or self.reader.rows * self.reader.cols == 0:
            for i in stripes:
                self.stripe(i)
            return
        with ThreadPoolExecutor(max_workers=workers) as pool:
            for _ in pool.map(self.stripe, stripes):  # re-raises a stripe's error
                pass


def scan(reader: RowReader) -> MatrixStats:
    """One sequential pass for norms, max |v|, hashes and the column sum; then exact checks of the few
    candidate rows (equal keys, a norm close to the mean's)."""
    n = reader.rows
    one = _Pass(reader)
    one.run()
    norm, max_abs, hashes = one.norm, one.max_abs, one.hashes
    colsum = one.colsums.sum(axis=0)
    np.sqrt(norm, out=norm)
    zero = max_abs <= ZERO_MAX_ABS
    nonzero = int((~zero).sum())
    mean = colsum / max(nonzero, 1)
    mean_norm = float(np.sqrt(mean @ mean))
    # transformers averages every old row, zero rows included: try both means.
    means = [mean, colsum / max(n, 1)] if nonzero < n else [mean]
    median_norm = float(np.median(norm[~zero])) if nonzero else 0.0
    return MatrixStats(
        tensor=reader.info.name,
        dtype=reader.info.dtype,
        rows=n,
        cols=reader.cols,
        norm=norm,
        max_abs=max_abs,
        duplicate_of=_duplicates(reader, hashes, zero),
        mean_like=np.logical_or.reduce([_mean_like(reader, norm, zero, m, median_norm) for m in means]),
        mean_norm=mean_norm,
        median_norm=median_norm,
    )


def _duplicates(reader: RowReader, hashes: np.ndarray, zero: np.ndarray) -> np.ndarray:
    """For each non-zero row, the first row with the same bits (verified exactly), else -1."""
    out = np.full(len(hashes), -1, np.int64)
    ids = np.flatnonzero(~zero)
    if len(ids) < 2:
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
        first_bits.update(zip(part.tolist(), _row_words(bits)))
    step = reader.chunk_rows()
    for i in range(0, len(cand), step):
        part, firsts_part = cand[i : i + step], cand_first[i : i + step]
        words = _row_words(np.asarray(reader.raw[part]))
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
