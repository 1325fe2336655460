"""What a rule needs from the facts, and why a need is not met (then the rule is skipped, not run)."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .checkpoint import Facts


class Requirement(str, enum.Enum):
    """A fact a static rule cannot run without."""

    TOKENIZER = "tokenizer"
    TENSORS = "tensors"
    INPUT_EMBEDDING = "input_embedding"
    UNTIED_OUTPUT = "untied_output"
    CHAT_TEMPLATE = "chat_template"
    CONFIG_VOCAB_SIZE = "config_vocab_size"

    def __str__(self) -> str:
        return self.value


def missing_fact(facts: Facts, requires: Iterable[Requirement]) -> str | None:
    """Why a rule needing ``requires`` cannot run on these facts, or None."""
    need = first_missing(facts, requires)
    return _why_missing(facts, need) if need is not None else None


def first_missing(facts: Facts, requires: Iterable[Requirement]) -> Requirement | None:
    """The first of ``requires`` these facts do not meet (the one :func:`missing_fact` explains), or None."""
    for need in requires:
        if _why_missing(facts, need):
            return need
    return None


def _why_missing(facts: Facts, need: Requirement) -> str | None:
    emb = facts.embeddings
    if need is Requirement.TOKENIZER:
        return None if facts.tokenizer else facts.missing.get("tokenizer", "no tokenizer")
    if need is Requirement.TENSORS:
        return None if facts.tensors else facts.missing.get("tensors", "no weights")
    if need is Requirement.INPUT_EMBEDDING:
        if facts.tensors is None or not facts.tensors.tensors:
            return facts.missing.get("tensors", "no weights")
        return None if emb and emb.input else facts.missing.get("input_embedding", "no input embeddings")
    if need is Requirement.UNTIED_OUTPUT:
        if not emb or emb.input is None:
            return facts.missing.get("input_embedding", facts.missing.get("tensors", "no weights"))
        if emb.tied:
            return "output embeddings are tied to the input embeddings (HVA101 covers them)"
        return None if emb.output else "no separate output-embedding (lm_head) tensor"
    if need is Requirement.CHAT_TEMPLATE:
        if not facts.tokenizer:
            return facts.missing.get("tokenizer", "no tokenizer")
        return None if facts.tokenizer.chat_template else "the tokenizer has no chat template"
    if need is Requirement.CONFIG_VOCAB_SIZE:
        return None if facts.config.vocab_size is not None else "config.json has no vocab_size"
    raise ValueError(f"unknown fact requirement {need!r}")
