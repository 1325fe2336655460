"""The one streaming pass over a matrix: per-row L2 norm and 64-bit key, and the column sums.

Two threads, one core each. The reader thread reads stored rows in blocks (one ``preadv`` per block, the
GIL released for all of it) and takes each row's key from the block it just read; the calling thread
widens each block an L2-sized slice at a time and reduces the slice while it is hot in cache. Hand-overs
are per block, not per slice: threads that trade the GIL every few microseconds run slower than one
thread (measured on this project's 2-core machine).

bf16 and fp16 of even width are widened in pairs: one 32-bit word holds two values, written to two
contiguous halves, the even columns' and the odd ones' (bf16: ``io.dtypes.bf16_pairs_to_float32``;
fp16: see ``_Layout``). A row's norm does not
depend on the order of its columns, so each half is reduced on its own and the column sums are
interleaved back at the end.
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..io.dtypes import bf16_pairs_to_float32, to_float32
from ..io.rows import RowReader

BLOCK_BYTES = 8 * 1024 * 1024  # stored bytes read at a time (one hand-over between the threads)
BLOCKS = 3  # blocks in flight: one being read, one being reduced, one spare
SLICE_BYTES = 512 * 1024  # float32 bytes widened and reduced at a time: they stay in L2
WIDE_COLS = 65536  # rows wider than this sum their squares in float64 (float32 loses digits and overflows)


def _rowdot(a: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Each row's dot product with itself, summed in ``out``'s dtype (float32, or float64 for wide rows)."""
    if out.dtype == np.float32 and hasattr(np, "vecdot"):  # numpy >= 2: BLAS per row, half einsum's time
        return np.vecdot(a, a, out=out)
    return np.einsum("ij,ij->i", a, a, out=out, dtype=out.dtype)


def _flushes_subnormals() -> bool:
    """Whether this thread's float arithmetic treats subnormals as zero (DAZ/FTZ, set by
    ``torch.set_flush_denormal(True)`` or code built with -ffast-math): the fp16 pair widening multiplies
    float32 subnormals, so it then falls back to numpy's cast, which works on integers."""
    tiny = np.array([2.0**-140], np.float32)
    return bool(np.multiply(tiny, np.float32(2.0**112))[0] != np.float32(2.0**-28))


def row_keys(bits: np.ndarray) -> np.ndarray:
    """A cheap 64-bit key per row (wrapping sum of its ``row_words``): equal rows have equal keys; rows that
    share a key are compared bit for bit afterwards."""
    return row_words(bits).sum(axis=1, dtype=np.uint64)


def row_words(bits: np.ndarray) -> np.ndarray:
    """Each row's bits as 64-bit words (when a row is not a multiple of 8 bytes: each stored value widened
    to 64 bits)."""
    u = np.asarray(bits).view(np.dtype(f"<u{bits.dtype.itemsize}"))
    nbytes = u.shape[1] * u.dtype.itemsize
    if nbytes % 8 == 0 and u.flags.c_contiguous:
        return u.view(np.uint64)
    return u.astype(np.uint64)


F16_SCALE = np.float32(2.0**112)  # float32 exponent bias minus float16's: rescales a moved half exactly
F16_KEEP = np.uint32(0x8FFFE000)  # sign, and a half's exponent and mantissa once moved to float32's place


class _Layout:
    """How a slice of stored rows becomes the float32 parts whose rows the pass reduces.

    Even widths of bf16 and fp16 are split in pairs (see the module's docstring). fp16 moves each half's
    exponent and mantissa under float32's with an arithmetic shift (the sign lands in bit 31; the three
    copies of it that follow are masked off) and scales by 2**112: exact for every finite half, subnormals
    included, and three times faster than numpy's cast. A half that is inf or NaN would come out finite, so
    a block holding one (``special``, checked by the reader thread) is widened by numpy's cast instead, as
    is every block when subnormals flush to zero in this thread (``_flushes_subnormals``).
    """

    def __init__(self, dtype: str, rows: int, cols: int):
        self.dtype = dtype
        self.pairs = dtype in ("BF16", "F16") and cols % 2 == 0
        self.cast_always = self.pairs and dtype == "F16" and _flushes_subnormals()
        if self.pairs:
            self.bufs = [np.empty((rows, cols // 2), np.uint32) for _ in range(2)]
        elif dtype != "F32":
            self.bufs = [np.empty((rows, cols), np.float32)]

    def special(self, bits: np.ndarray) -> bool:
        """Whether an fp16 block holds inf or NaN (exponent all ones): the largest positive pattern as int16,
        the largest negative one as uint16."""
        if not (self.pairs and self.dtype == "F16") or bits.size == 0:
            return False
        u = bits.view(np.uint16)
        return bool(int(u.view(np.int16).max()) >= 0x7C00 or int(u.max()) >= 0xFC00)

    def parts(self, bits: np.ndarray, special: bool = False) -> list[np.ndarray]:
        k = len(bits)
        if not self.pairs:
            return [bits] if self.dtype == "F32" else [to_float32(bits, self.dtype, self.bufs[0][:k])]
        even, odd = (b[:k] for b in self.bufs)
        ef, of = even.view(np.float32), odd.view(np.float32)
        if special or self.cast_always:
            np.copyto(ef, bits[:, 0::2])
            np.copyto(of, bits[:, 1::2])
            return [ef, of]
        words = bits.view(np.uint32)
        if self.dtype == "BF16":
            bf16_pairs_to_float32(words, even, odd)
            return [ef, of]
        np.left_shift(words, np.uint32(16), out=even)
        np.right_shift(even.view(np.int32), np.int32(3), out=even.view(np.int32))
        np.right_shift(words.view(np.int32), np.int32(3), out=odd.view(np.int32))
        for half, floats in ((even, ef), (odd, of)):
            np.bitwise_and(half, F16_KEEP, out=half)
            np.multiply(floats, F16_SCALE, out=floats)
        return [ef, of]

    def columns(self, sums: list[np.ndarray], cols: int) -> np.ndarray:
        """The column sums in the matrix's column order."""
        if not self.pairs:
            return sums[0]
        out = np.empty(cols, np.float64)
        out[0::2], out[1::2] = sums
        return out


@dataclass(frozen=True)
class PassResult:
    norm: np.ndarray  # float64 L2 norm per row
    keys: np.ndarray  # uint64 key per row (row_keys)
    colsum: np.ndarray  # float64 sum of every row


def _read_blocks(reader: RowReader, layout: _Layout, blocks: list[np.ndarray], free: queue.SimpleQueue,
                 full: queue.SimpleQueue, stop: threading.Event, keys: np.ndarray) -> None:
    """The reader thread: fill free blocks in row order, key their rows, hand them over; an error is handed
    over in place of a block (the caller raises it)."""
    try:
        per_block, row_bytes = len(blocks[0]), reader.cols * reader.storage.itemsize
        with open(reader.path, "rb", buffering=0) as fh:
            for start in range(0, reader.rows, per_block):
                index = free.get()
                if index is None or stop.is_set():
                    return
                stop_row = min(reader.rows, start + per_block)
                bits = blocks[index][: stop_row - start]
                reader.read_into(fh, start, bits, row_bytes)
                keys[start:stop_row] = row_keys(bits)
                full.put((index, start, stop_row, layout.special(bits)))
    except BaseException as exc:  # noqa: BLE001 - not swallowed: handed to the caller, which re-raises it
        full.put(exc)
        return
    full.put(None)


def run_pass(reader: RowReader) -> PassResult:
    """Norms, keys and column sums of every row of ``reader``'s matrix, reading each stored byte once."""
    n, d = reader.rows, reader.cols
    acc = np.float64 if d > WIDE_COLS else np.float32
    squares: np.ndarray = np.zeros(n, acc)
    keys = np.zeros(n, np.uint64)
    if n * d == 0:
        return PassResult(squares.astype(np.float64), keys, np.zeros(d, np.float64))
    row_bytes = d * reader.storage.itemsize
    per_block = max(1, min(n, BLOCK_BYTES // row_bytes))
    step = max(1, min(per_block, SLICE_BYTES // (4 * d)))
    layout = _Layout(reader.info.dtype, step, d)
    blocks = [np.empty((per_block, d), reader.storage) for _ in range(min(BLOCKS, -(-n // per_block)))]
    free: queue.SimpleQueue[int | None] = queue.SimpleQueue()
    full: queue.SimpleQueue[Any] = queue.SimpleQueue()
    for index in range(len(blocks)):
        free.put(index)
    stop = threading.Event()
    thread = threading.Thread(target=_read_blocks, args=(reader, layout, blocks, free, full, stop, keys),
                              name="hf-vocab-audit rows", daemon=True)
    ones = np.ones(step, np.float32)
    spare: np.ndarray = np.empty(step, acc)
    width = d // 2 if layout.pairs else d
    parts_total = [np.zeros(width, np.float64) for _ in range(2 if layout.pairs else 1)]
    partial = np.empty(width, np.float32)
    thread.start()
    try:
        while (item := full.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            index, first, last, special = item
            block = blocks[index]
            for start in range(first, last, step):
                stop_row = min(last, start + step)
                k = stop_row - start
                parts = layout.parts(block[start - first : stop_row - first], special)
                out = squares[start:stop_row]
                for i, part in enumerate(parts):
                    if i == 0:
                        _rowdot(part, out)
                    else:
                        out += _rowdot(part, spare[:k])
                    parts_total[i] += np.dot(ones[:k], part, out=partial)
            free.put(index)
    finally:
        stop.set()
        free.put(None)  # wakes a reader waiting for a free block
        thread.join()
    return PassResult(np.sqrt(squares.astype(np.float64)), keys, layout.columns(parts_total, d))
