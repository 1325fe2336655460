"""Read one small 1-D integer tensor (an EAGLE draft's ``d2t`` map) from its safetensors byte range, without numpy.

Only the tensor's own bytes are read, at the offsets of the already validated header, and only up to a bound
on the entries: a map of a few thousand ids is worth reading on a static check, a hostile billion is not.
"""

from __future__ import annotations

import os
import sys
from array import array
from pathlib import Path

from .safetensors_header import TensorInfo

INT_TYPES = {"I64": "q", "I32": "i"}  # safetensors dtype -> array typecode of the same width


def read_int_vector(folder: Path, info: TensorInfo, limit: int) -> tuple[array[int] | None, str | None]:
    """The values of ``info`` (a 1-D I64/I32 tensor of a safetensors file in ``folder``), or why they were not
    read: another dtype or shape, more than ``limit`` entries, a byte range that does not fit, a short file."""
    code = INT_TYPES.get(info.dtype)
    if code is None:
        return None, f"{info.name} is {info.dtype}, not an integer tensor"
    n = info.shape[0] if len(info.shape) == 1 else None
    if n is None or info.begin is None or info.end is None:
        return None, f"{info.name} has shape {list(info.shape)}, not a list of ids in a safetensors file"
    if n > limit:
        return None, f"{info.name} has {n} entries (more than {limit} are not read)"
    values: array[int] = array(code)
    if values.itemsize * n != info.end - info.begin:
        return None, f"{info.name}: its byte range does not hold {n} {info.dtype} values"
    try:
        with open(folder / info.file, "rb") as fh:
            fh.seek(info.begin)
            data = fh.read(info.end - info.begin)
    except OSError as exc:
        return None, f"{info.file}: cannot read {info.name}: {os.strerror(exc.errno or 0) or exc}"
    if len(data) != info.end - info.begin:
        return None, f"{info.file} ends inside {info.name}"
    values.frombytes(data)
    if sys.byteorder != "little":  # safetensors is little-endian
        values.byteswap()
    return values, None


__all__ = ["INT_TYPES", "read_int_vector"]
