"""Safetensors dtypes as numpy sees them, and the bf16 <-> float32 conversions (bf16 is stored as uint16)."""

from __future__ import annotations

from typing import Any

import numpy as np

# safetensors dtype -> numpy dtype of the stored bits (bf16 has no numpy dtype: its 16 bits as uint16)
FLOAT_DTYPES: dict[str, type[Any]] = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "BF16": np.uint16}
# the subset the weights analysis reads (little-endian storage)
STORAGE: dict[str, np.dtype[Any]] = {"BF16": np.dtype("<u2"), "F16": np.dtype("<f2"), "F32": np.dtype("<f4")}


def to_float32(block: np.ndarray, dtype: str, out: np.ndarray | None = None) -> np.ndarray:
    """float32 values of stored ``block`` (into ``out`` when given, to reuse one buffer).

    bf16 widens exactly: its 16 stored bits become the high half of a float32.
    """
    if out is None:
        if dtype == "BF16":
            return (block.astype(np.uint32) << 16).view(np.float32)
        return block.astype(np.float32)
    if dtype == "BF16":
        np.left_shift(block, 16, out=out.view(np.uint32), dtype=np.uint32)
    else:
        out[...] = block
    return out


def bf16_pairs_to_float32(words: np.ndarray, even: np.ndarray, odd: np.ndarray) -> None:
    """Widen bf16 rows held as 32-bit words (two values each) into the float32 bits of their even columns
    (``word << 16``) and odd columns (``word & 0xFFFF0000``): same-width integer ops, no casting, exact."""
    np.left_shift(words, np.uint32(16), out=even)
    np.bitwise_and(words, np.uint32(0xFFFF0000), out=odd)


def from_float32(values: np.ndarray, dtype: str) -> np.ndarray:
    """float32 -> the checkpoint dtype, rounding to nearest even (as torch does)."""
    values = np.ascontiguousarray(values, dtype=np.float32)
    if dtype != "BF16":
        return values.astype(FLOAT_DTYPES[dtype])
    bits = values.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    rounded[np.isnan(values)] = 0x7FC0
    return rounded
