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


# What a missing fact is, when a healthy checkpoint of the kind has it: a gap in the audit's coverage (the
# rule could not examine what it should), as opposed to a rule that does not apply (tied embeddings, no
# chat template, a composite config without vocab_size).
class GapKind(str, enum.Enum):
    TOKENIZER = "tokenizer"
    WEIGHTS = "weights"
    VOCABULARY = "vocabulary matrix"
    CLASS_ROWS = "input rows the class builds"


CTC_NO_INPUT = "a CTC speech model has no token embedding: its vocabulary is the CTC head (HVA102 covers it)"


def missing_fact(facts: Facts, requires: Iterable[Requirement]) -> str | None:
    """Why a rule needing ``requires`` cannot run on these facts, or None."""
    absent = _first_absent(facts, requires)
    return absent[0] if absent is not None else None


def missing_gap(facts: Facts, requires: Iterable[Requirement]) -> GapKind | None:
    """The gap behind :func:`missing_fact`'s reason, or
    None when every requirement is met or the one not met means the rule does not apply here."""
    absent = _first_absent(facts, requires)
    return absent[1] if absent is not None else None


def _first_absent(facts: Facts, requires: Iterable[Requirement]) -> tuple[str, GapKind | None] | None:
    for need in requires:
        absent = _absent(facts, need)
        if absent is not None:
            return absent
    return None


def _absent(facts: Facts, need: Requirement) -> tuple[str, GapKind | None] | None:
    """(why ``need`` is not met, its gap or None), or None when it is met."""
    emb = facts.embeddings
    no_weights = facts.tensors is None or not facts.tensors.tensors
    if need is Requirement.TOKENIZER:
        return None if facts.tokenizer else (facts.missing.get("tokenizer", "no tokenizer"), GapKind.TOKENIZER)
    if need is Requirement.TENSORS:
        return None if facts.tensors else (facts.missing.get("tensors", "no weights"), GapKind.WEIGHTS)
    if need is Requirement.INPUT_EMBEDDING:
        if no_weights:
            return facts.missing.get("tensors", "no weights"), GapKind.WEIGHTS
        if emb and emb.ctc_head:
            return CTC_NO_INPUT, None
        return None if emb and emb.input else (facts.missing.get("input_embedding", "no input embeddings"),
                                               GapKind.VOCABULARY)
    if need is Requirement.UNTIED_OUTPUT:
        if emb and emb.ctc_head:
            return None  # the CTC head is the vocabulary the tokenizer's ids index
        if not emb or emb.input is None:
            return (facts.missing.get("input_embedding", facts.missing.get("tensors", "no weights")),
                    GapKind.WEIGHTS if no_weights else GapKind.VOCABULARY)
        if emb.tied:
            return "output embeddings are tied to the input embeddings (HVA101 covers them)", None
        return None if emb.output else ("no separate output-embedding (lm_head) tensor", None)
    if need is Requirement.CHAT_TEMPLATE:
        if not facts.tokenizer:
            return facts.missing.get("tokenizer", "no tokenizer"), GapKind.TOKENIZER
        return None if facts.tokenizer.chat_template else ("the tokenizer has no chat template", None)
    if need is Requirement.CONFIG_VOCAB_SIZE:
        if facts.config.vocab_size is None:
            return "config.json has no vocab_size", None
        return undecided_rows(facts)
    raise ValueError(f"unknown fact requirement {need!r}")


def undecided_rows(facts: Facts) -> tuple[str, GapKind | None] | None:
    """The input rows transformers builds beyond vocab_size cannot be derived here (a class whose extra rows
    hang on config keys set away from the defaults, and no PyTorch to build it on the meta device)."""
    from .class_shapes import extra_input_rows, extra_rows_keys

    if extra_input_rows(facts.config) is not None:
        return None
    keys = ", ".join(extra_rows_keys(facts.config))
    return (f"the input rows {facts.config.model_type} builds beyond vocab_size depend on {keys}, set away from "
            "the defaults; deriving them needs PyTorch (the class built on the meta device)", GapKind.CLASS_ROWS)
