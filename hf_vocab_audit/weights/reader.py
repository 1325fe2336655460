"""Read one 2-D tensor's rows from a safetensors file: memory-mapped, in bounded row chunks.

Only the byte range of the named tensor is mapped (offsets from the already validated header);
nothing else in the checkpoint is read. bf16 is widened to float32 by a 16-bit shift.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from ..errors import AuditError
from ..facts.safetensors_header import TensorInfo

# safetensors dtype -> numpy dtype of the stored bits
STORAGE = {"BF16": np.dtype("<u2"), "F16": np.dtype("<f2"), "F32": np.dtype("<f4")}
CHUNK_BYTES = 1024 * 1024  # float32 bytes per chunk: stays in cache between the passes over it


def supported(info: TensorInfo) -> str | None:
    """Why ``info`` cannot be read here, or None."""
    if info.dtype not in STORAGE:
        return f"{info.name} is {info.dtype}; weight statistics read BF16, F16 and F32"
    if len(info.shape) != 2:
        return f"{info.name} has shape {list(info.shape)}, not a 2-D matrix"
    if info.begin is None or info.end is None:
        return f"{info.name} is not in a safetensors file"
    return None


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
            self._mm = np.memmap(self.path, dtype=self.storage, mode="r", offset=info.begin,
                                 shape=(self.rows, self.cols))
        except (OSError, ValueError) as exc:
            raise AuditError(self.path, f"cannot map tensor {info.name!r}: {exc}") from None

    @property
    def raw(self) -> np.ndarray:
        """The stored values (uint16 bits for bf16), memory-mapped."""
        return self._mm

    def chunk_rows(self) -> int:
        return max(1, CHUNK_BYTES // max(1, 4 * self.cols))

    def to_float(self, bits: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """float32 values of stored ``bits`` (into ``out`` when given, to reuse one buffer)."""
        if out is None:
            out = np.empty(bits.shape, np.float32)
        if self.info.dtype == "BF16":
            np.left_shift(bits, 16, out=out.view(np.uint32), dtype=np.uint32)
        else:
            out[...] = bits
        return out

    def chunks(self) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        """(first row, stored bits, float32 values) per chunk of rows; the float buffer is reused."""
        step = self.chunk_rows()
        buf = np.empty((min(step, self.rows), self.cols), np.float32)
        for start in range(0, self.rows, step):
            bits = self._mm[start : start + step]
            yield start, bits, self.to_float(bits, buf[: len(bits)])

    def take(self, ids: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """(ids, stored bits, float32 values) for the rows ``ids``, in bounded chunks."""
        step = self.chunk_rows()
        for i in range(0, len(ids), step):
            part = ids[i : i + step]
            bits = np.asarray(self._mm[part])
            yield part, bits, self.to_float(bits)
