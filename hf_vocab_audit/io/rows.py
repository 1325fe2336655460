"""Read one 2-D tensor's rows from a safetensors file: memory-mapped, in bounded row chunks.

Only the byte range of the named tensor is mapped (offsets from the already validated header);
nothing else in the checkpoint is read. bf16 is widened to float32 by a 16-bit shift.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from io import RawIOBase
from pathlib import Path

import numpy as np

from ..errors import AuditError, first_line
from .dtypes import FLOAT_DTYPES, STORAGE, bf16_pairs_to_float32, to_float32
from .safetensors_header import TensorInfo

CHUNK_BYTES = 256 * 1024  # float32 bytes of rows re-read at a time (take): they stay in L2
MEAN_CHUNK_BYTES = 256 * 1024  # stored bytes of rows summed at a time for a mean: they stay in L2 as float32
MAP_WINDOW_BYTES = 16 * 1024 * 1024  # mapped at a time: pages of a mapping count in the resident set


def supported(info: TensorInfo) -> str | None:
    """Why ``info`` cannot be read here, or None."""
    if info.dtype not in STORAGE:
        return f"{info.name} is {info.dtype}; weight statistics read BF16, F16 and F32"
    if len(info.shape) != 2:
        return f"{info.name} has shape {list(info.shape)}, not a 2-D matrix"
    if info.begin is None or info.end is None:
        return f"{info.name} is not in a safetensors file"
    return None


def map_rows(path: Path, info: TensorInfo, rows: int, width: int, first: int = 0) -> np.ndarray:
    """``rows`` rows (``width`` stored values each) of a tensor from row ``first``, memory-mapped read-only:
    only that byte range is mapped. AuditError when the file is shorter or cannot be mapped."""
    dtype = np.dtype(FLOAT_DTYPES[info.dtype])
    try:
        return np.memmap(path, dtype=dtype, mode="r", offset=(info.begin or 0) + first * width * dtype.itemsize,
                         shape=(rows, width))
    except (OSError, ValueError) as exc:
        raise AuditError(path, f"cannot map tensor {info.name!r}: {first_line(exc)}") from None


class RowReader:
    """Rows of one matrix as float32 chunks; ``raw`` gives the stored bits for exact comparisons."""

    def __init__(self, folder: Path, info: TensorInfo):
        self.info = info
        self.path = folder / info.file
        self.rows, self.cols = info.shape
        self.storage = STORAGE[info.dtype]
        if self.rows * self.cols == 0:
            self._mm: np.ndarray = np.zeros((self.rows, self.cols), self.storage)
            return
        try:
            self._mm = np.memmap(self.path, dtype=self.storage, mode="r", offset=info.begin or 0,
                                 shape=(self.rows, self.cols))
        except (OSError, ValueError) as exc:
            raise AuditError(self.path, f"cannot map tensor {info.name!r}: {exc}") from None

    @property
    def raw(self) -> np.ndarray:
        """The stored values (uint16 bits for bf16), memory-mapped."""
        return self._mm

    def read_into(self, fh: RawIOBase, start: int, out: np.ndarray, row_bytes: int) -> None:
        """Read the stored rows from ``start`` into ``out`` (C-contiguous) from ``fh``, this tensor's file
        opened unbuffered: one positional read, no mapping."""
        view = memoryview(out).cast("B")  # type: ignore[arg-type]  # numpy arrays export the buffer protocol; its stubs do not say so
        offset = (self.info.begin or 0) + start * row_bytes
        got = 0
        while got < len(view):
            if hasattr(os, "preadv"):
                n = os.preadv(fh.fileno(), [view[got:]], offset + got)
            else:  # Windows
                fh.seek(offset + got)
                n = fh.readinto(view[got:])
            if not n:
                raise AuditError(self.path, f"ended early while reading tensor {self.info.name!r}")
            got += n

    def chunk_rows(self) -> int:
        return max(1, CHUNK_BYTES // max(1, 4 * self.cols))

    def to_float(self, bits: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """float32 values of stored ``bits`` (into ``out`` when given, to reuse one buffer)."""
        return to_float32(bits, self.info.dtype, np.empty(bits.shape, np.float32) if out is None else out)

    def take(self, ids: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """(ids, stored bits, float32 values) for the rows ``ids``, in bounded chunks."""
        step = self.chunk_rows()
        for i in range(0, len(ids), step):
            part = ids[i : i + step]
            bits = np.asarray(self._mm[part])
            yield part, bits, self.to_float(bits)


def mean_of_rows(path: Path, info: TensorInfo, rows: int, width: int, first: int,
                 leave_out: np.ndarray | None = None) -> tuple[np.ndarray, int]:
    """(float32 mean, rows averaged) of the first ``first`` of ``rows`` rows of ``width`` values of a
    tensor, except the row ids in ``leave_out``; read in blocks of rows.

    Rows are summed in float32 within a block (float64 for F64 tensors), blocks in float64. No row: zeros, 0.
    """
    n = min(first, rows)
    keep = None
    if leave_out is not None:
        keep = np.ones(n, bool)
        keep[leave_out[(leave_out >= 0) & (leave_out < n)]] = False
    count = n if keep is None else int(keep.sum())
    total = np.zeros(width, np.float64)
    if count == 0 or width == 0:
        return total.astype(np.float32), count
    itemsize = np.dtype(FLOAT_DTYPES[info.dtype]).itemsize
    step = max(1, MEAN_CHUNK_BYTES // max(width * itemsize, 1))
    window = step * max(1, MAP_WINDOW_BYTES // (step * width * itemsize))
    pairs = info.dtype == "BF16" and width % 2 == 0
    # bf16 pairs (bf16_pairs_to_float32): the float32 column sums are the same additions in the same order
    # as on widened rows
    floats = np.empty((min(step, n), width // 2 if pairs else width), np.uint32 if pairs else np.float32)
    odd = np.empty_like(floats) if pairs else floats
    even_total, odd_total = total[0::2], total[1::2]
    for lo in range(0, n, window):
        mm = map_rows(path, info, min(window, n - lo), width, lo)
        for at in range(0, len(mm), step):
            start = lo + at
            raw = np.asarray(mm[at : at + step])
            if keep is not None:
                raw = raw[keep[start : start + len(raw)]]
            k = len(raw)
            if pairs:
                bf16_pairs_to_float32(raw.view(np.uint32), floats[:k], odd[:k])
                even_total += np.add.reduce(floats[:k].view(np.float32), axis=0)
                odd_total += np.add.reduce(odd[:k].view(np.float32), axis=0)
                continue
            block = raw if info.dtype == "F64" else to_float32(raw, info.dtype, floats[:k])
            total += np.add.reduce(block, axis=0)
        del mm, raw
    return (total / count).astype(np.float32), count
