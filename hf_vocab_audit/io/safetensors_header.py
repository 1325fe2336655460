"""Read tensor names, dtypes and shapes from safetensors headers without touching the weights.

The header is validated as strictly as the ``safetensors`` library does (and with bounded memory),
because a checkpoint from a pull request is untrusted input.
"""

from __future__ import annotations

import json
import math
import os
import stat
import struct
from dataclasses import dataclass
from pathlib import Path

from ..errors import AuditError
from .jsonfile import loads
from .stand_in import HEAD_BYTES, describe

# Bits per element of every dtype safetensors knows.
DTYPE_BITS = {
    "BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8,
    "I16": 16, "U16": 16, "F16": 16, "BF16": 16,
    "I32": 32, "U32": 32, "F32": 32,
    "I64": 64, "U64": 64, "F64": 64, "C64": 64,
    "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6,
}  # fmt: skip
MAX_HEADER_BYTES = 100 * 1024 * 1024  # the safetensors library's own limit


@dataclass(frozen=True)
class TensorInfo:
    """A tensor's name, dtype and shape, and where its bytes are (absolute file offsets)."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    file: str  # path relative to the checkpoint folder
    begin: int | None = None
    end: int | None = None

    @property
    def rows(self) -> int | None:
        return self.shape[0] if self.shape else None

    @property
    def span(self) -> tuple[int, int]:
        """(begin, end) file offsets of the data; only a safetensors tensor has them (not a pickled one)."""
        if self.begin is None or self.end is None:
            raise ValueError(f"tensor {self.name} in {self.file} has no byte offsets")
        return self.begin, self.end

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * DTYPE_BITS.get(self.dtype, 8) // 8


@dataclass(frozen=True)
class SafetensorsHeader:
    path: Path
    data_start: int
    tensors: tuple[TensorInfo, ...]
    metadata: dict[str, str]


def read_header(path: Path, rel: str) -> SafetensorsHeader:
    """Parse and validate one safetensors file's header: one ``stat`` and one open per shard (a 405 B
    checkpoint has 191), the stand-in check made on the bytes the header read starts with."""
    try:
        info = os.stat(path)
    except OSError as exc:
        raise AuditError(path, f"cannot be read: {exc.strerror or exc}") from None
    if not stat.S_ISREG(info.st_mode):  # a FIFO or device would block or never end
        raise AuditError(path, "is not a regular file")
    size = info.st_size
    try:
        with open(path, "rb") as fh:
            head = fh.read(HEAD_BYTES)
            stand_in = describe(head, size, binary=True)  # an LFS pointer's first 8 bytes: a "length" of 2^61
            if stand_in is not None:
                raise AuditError(path, stand_in)
            if len(head) < 8:
                raise AuditError(path, f"truncated safetensors file: {size} bytes, no 8-byte header length")
            (n,) = struct.unpack("<Q", head[:8])
            if n > size - 8:
                raise AuditError(path, f"safetensors header length {n} is larger than the file ({size} bytes)")
            if n > MAX_HEADER_BYTES:
                raise AuditError(path, f"safetensors header length {n} exceeds the {MAX_HEADER_BYTES}-byte limit")
            raw = head[8 : 8 + n]
            if len(raw) < n:
                raw += fh.read(n - len(raw))
    except OSError as exc:
        raise AuditError(path, f"cannot be read: {exc.strerror or exc}") from None
    if len(raw) != n:
        raise AuditError(path, "truncated safetensors header")
    try:
        header = loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise AuditError(path, "safetensors header is not valid UTF-8") from None
    except (ValueError, RecursionError) as exc:  # ValueError: also integers over Python's 4300-digit limit
        why = (
            exc.msg if isinstance(exc, json.JSONDecodeError) else "too deep" if isinstance(exc, RecursionError) else exc
        )
        raise AuditError(path, f"safetensors header is not valid JSON ({why})") from None
    if not isinstance(header, dict):
        raise AuditError(path, "safetensors header must be a JSON object")
    data_start = 8 + n
    data_len = size - data_start
    metadata = header.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise AuditError(path, "safetensors __metadata__ must map strings to strings")
    tensors: list[TensorInfo] = []
    for name, entry in header.items():
        tensors.append(_tensor(path, rel, name, entry, data_start, data_len))
    spans = sorted((t.begin, t.end, t.name) for t in tensors if t.begin is not None and t.end is not None and t.end != t.begin)
    for (_b0, e0, n0), (b1, _e1, n1) in zip(spans, spans[1:], strict=False):
        if b1 < e0:
            raise AuditError(path, f"tensors {n0[:200]!r} and {n1[:200]!r} overlap in the data section")
    return SafetensorsHeader(path=path, data_start=data_start, tensors=tuple(tensors), metadata=metadata)


def _tensor(path: Path, rel: str, name: str, entry: object, data_start: int, data_len: int) -> TensorInfo:
    where = f"tensor {name!r}"[:200]
    if not isinstance(entry, dict):
        raise AuditError(path, f"{where}: header entry must be an object")
    dtype = entry.get("dtype")
    if not isinstance(dtype, str) or dtype not in DTYPE_BITS:
        raise AuditError(path, f"{where}: unknown dtype {dtype!r}"[:300])
    shape = entry.get("shape")
    if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        raise AuditError(path, f"{where}: shape must be a list of non-negative integers")
    offsets = entry.get("data_offsets")
    if (
        not isinstance(offsets, list)
        or len(offsets) != 2
        or not all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)
    ):
        raise AuditError(path, f"{where}: data_offsets must be two integers")
    begin, end = offsets
    if not 0 <= begin <= end:
        raise AuditError(path, f"{where}: data_offsets [{begin}, {end}] are not increasing")
    if end > data_len:
        raise AuditError(path, f"{where}: data_offsets end {end} is past the end of the data ({data_len} bytes)")
    bits = _bits(shape, DTYPE_BITS[dtype], limit=8 * data_len)
    if bits is None:
        raise AuditError(path, f"{where}: {dtype} {_short(shape)} needs more bytes than the file holds ({data_len})")
    if bits % 8 or bits // 8 != end - begin:
        need = f"{bits // 8}" if bits % 8 == 0 else f"{bits / 8:g}"
        raise AuditError(
            path, f"{where}: {dtype} {_short(shape)} needs {need} bytes but data_offsets span {end - begin}"
        )
    return TensorInfo(name, dtype, tuple(shape), rel, data_start + begin, data_start + end)


def _bits(shape: list[int], bits_per_element: int, limit: int) -> int | None:
    """Bits a tensor needs, or None once that exceeds ``limit`` (a hostile shape's product can be enormous)."""
    if 0 in shape:
        return 0
    total = bits_per_element
    for dim in shape:
        total *= dim
        if total > limit:
            return None
    return total


def _short(shape: list[int]) -> str:
    text = str(shape)
    return text if len(text) <= 80 else text[:77] + "...]"
