"""Vocabulary geometry: which tensors carry a vocabulary dimension, along which axis, and how many rows."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ..io.safetensors_header import TensorInfo
from .embeddings import OUTPUT_SUFFIXES, VOCAB_BIAS_SUFFIXES, has_suffix

if TYPE_CHECKING:
    from .checkpoint import Facts


def vocab_tensors(facts: Facts) -> list[TensorInfo]:
    """Every tensor whose vocabulary dimension must grow with the embeddings."""
    emb, tensors = facts.embeddings, facts.tensors
    if emb is None or emb.input is None or tensors is None:
        return []
    out = [emb.input]
    if emb.output is not None:
        out.append(emb.output)
    else:  # tied, yet some checkpoints store the output matrix as well
        for t in tensors.tensors.values():
            if (t.name != emb.input.name and len(t.shape) == 2 and t.shape[1:] == emb.input.shape[1:]
                    and has_suffix(t.name, OUTPUT_SUFFIXES)):
                out.append(t)
    out.extend(emb.vocab_sized)
    return out


def vocab_axis(t: TensorInfo) -> int:
    """0 for embedding matrices (one row per token), -1 for vocabulary-sized biases such as (1, V)."""
    is_bias = has_suffix(t.name, VOCAB_BIAS_SUFFIXES)
    return -1 if is_bias or len(t.shape) == 1 else 0


def vocab_dim(t: TensorInfo) -> int:
    return t.shape[vocab_axis(t)]


def as_rows(t: TensorInfo) -> tuple[int, int]:
    """(vocabulary entries, values per entry) of a growable tensor laid out row-major."""
    if vocab_axis(t) == 0:
        return t.shape[0], math.prod(t.shape[1:])
    return t.shape[-1], 1
