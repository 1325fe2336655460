"""One limits model: what each id-bearing input of a model may hold, derived once.

The static rules, the dataset scan kernel and the training guard all check values against the same
:class:`InputLimits`: the static path builds it from a checkpoint's :class:`~.checkpoint.Facts`
(:func:`input_limits`), the guard from the live modules (``guard.limits.LiveLimits.inputs``), and each
asks :meth:`InputLimits.bound` what one input may hold. A new kind of limit is one field here and one
branch of ``bound``; every consumer then checks it.

What a head's loss accepts as ``labels`` is decided the way transformers decides it (:func:`label_kind`):
the head class named by ``architectures``, ``problem_type`` and ``num_labels`` (measured on CPU with the
tiny heads of the test suite: see docs/dataset-chat.md, "Labels per task head").
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .checkpoint import Facts

IGNORE_INDEX = -100  # the label value cross entropy skips


class LabelKind(str, Enum):
    """What a head's loss reads from ``labels`` (the values are the guard evidence's ``label_kind``)."""

    LM = "lm"  # token ids < the output-projection rows; the ignore index skipped
    CLASSES = "classes"  # one class id < num_labels per example; the ignore index skipped
    TOKEN_CLASSES = "token-classes"  # one class id < num_labels per token; the ignore index skipped
    REGRESSION = "regression"  # num_labels == 1 or problem_type regression: MSE on numbers, no range
    MULTI_LABEL = "multi-label"  # problem_type multi_label_classification: BCE on vectors of num_labels numbers
    SPANS = "spans"  # extractive QA start/end positions: transformers clamps them to the sequence length
    CHOICES = "choices"  # multiple choice: one choice index < the number of choices per example
    CTC = "ctc"  # CTC targets: ids < the CTC head's rows (config vocab_size); every negative is padding
    NONE = "none"  # no labels, or a head whose labels are not indexed


_CLASSIFICATION_HEADS = ("ForSequenceClassification", "ForAudioClassification", "ForImageClassification")
LM_HEADS = ("ForCausalLM", "LMHeadModel", "ForMaskedLM", "ForConditionalGeneration", "ForSeq2SeqLM",
             "ForPreTraining", "WithLMHead")


def label_kind(class_name: str, problem_type: Any, num_labels: Any, *, has_output: bool | None = None) -> LabelKind:
    """The label semantics of head class ``class_name``, as its ``forward`` decides them.

    Sequence classification: ``problem_type`` when set, else regression for ``num_labels == 1`` and class
    ids otherwise (transformers then infers multi-label from float labels at run time; integer class ids
    are what a classification dataset holds). ``has_output`` (the guard: whether the live model has an
    output projection) stands in for the class-name test of language-model heads.
    """
    if class_name.endswith("ForTokenClassification"):
        return LabelKind.TOKEN_CLASSES
    if class_name.endswith(_CLASSIFICATION_HEADS):
        if problem_type == "regression" or (problem_type is None and num_labels == 1):
            return LabelKind.REGRESSION
        if problem_type == "multi_label_classification":
            return LabelKind.MULTI_LABEL
        return LabelKind.CLASSES
    if class_name.endswith("ForQuestionAnswering"):
        return LabelKind.SPANS
    if class_name.endswith("ForMultipleChoice"):
        return LabelKind.CHOICES
    if class_name.endswith("ForCTC"):
        return LabelKind.CTC
    if has_output if has_output is not None else class_name.endswith(LM_HEADS):
        return LabelKind.LM
    return LabelKind.NONE


@dataclass(frozen=True)
class Bound:
    """Values ``0 <= v < below`` are safe, and so is ``ignore`` (and any negative when ``negatives_ignored``)."""

    below: int
    ignore: int | None = None
    negatives_ignored: bool = False

    def bad(self, values: Any) -> Any:
        """Mask of the values out of bound; works on numpy arrays and torch tensors alike."""
        if self.negatives_ignored:
            return values >= self.below
        out = (values < 0) | (values >= self.below)
        return out & (values != self.ignore) if self.ignore is not None else out


# The inputs a bound is asked for (a batch key, a dataset column role).
INPUT_IDS, DECODER_INPUT_IDS, TOKEN_TYPE_IDS, POSITION_IDS, LABELS, ATTENTION_MASK = (
    "input_ids", "decoder_input_ids", "token_type_ids", "position_ids", "labels", "attention_mask")


@dataclass(frozen=True)
class InputLimits:
    """Every range a model's inputs must respect; ``None`` means "not known, not checked"."""

    input_rows: int | None = None  # rows of the input embedding
    output_rows: int | None = None  # rows of the output projection (language-model labels)
    type_vocab_size: int | None = None  # rows of the token-type table
    positions: int | None = None  # usable learned absolute positions (longest sequence)
    rotary_positions: int | None = None  # max_position_embeddings of a rotary model (info only)
    num_labels: int | None = None  # classes of a classification head; the vector length of a multi-label one
    tokenizer_max_id: int | None = None
    eos_id: int | None = None  # set only when pad == eos
    decoder_input_rows: int | None = None  # an encoder-decoder's decoder embedding; None: the input rows
    position_ids_below: int | None = None  # explicit position_ids bound; None: ``positions``
    padding_idx: int | None = None  # RoBERTa-style: positions numbered from padding_idx + 1 over non-pad tokens
    label_kind: LabelKind = LabelKind.NONE
    ignore_index: int = IGNORE_INDEX
    replaced_ids: tuple[int, ...] = ()  # ids the model swaps for a valid one before the lookup (Gemma-3 images)
    attention_mask_below: int | None = None  # 2 under flash-attention (its varlen path sums the mask); else any value
    sources: tuple[tuple[str, str], ...] = ()  # limit name -> how it was derived ("position_embeddings has 512 rows")

    def source(self, name: str) -> str | None:
        """How limit ``name`` was derived, for a finding's message."""
        return dict(self.sources).get(name)

    def bound(self, key: str) -> Bound | None:
        """What input ``key`` may hold (None: nothing to check). ``labels`` follow :attr:`label_kind`."""
        if key == INPUT_IDS:
            return _bound(self.input_rows)
        if key == DECODER_INPUT_IDS:
            return _bound(self.decoder_input_rows if self.decoder_input_rows is not None else self.input_rows)
        if key == TOKEN_TYPE_IDS:
            return _bound(self.type_vocab_size)
        if key == POSITION_IDS:
            return _bound(self.position_ids_below if self.position_ids_below is not None else self.positions)
        if key == LABELS:
            return self.label_bound(self.label_kind)
        if key == ATTENTION_MASK:
            return _bound(self.attention_mask_below)
        raise KeyError(key)

    def label_bound(self, kind: LabelKind) -> Bound | None:
        """What labels read as ``kind`` may hold (a dataset column's role can differ from the head's)."""
        if kind == LabelKind.LM:
            return _bound(self.output_rows, self.ignore_index)
        if kind in (LabelKind.CLASSES, LabelKind.TOKEN_CLASSES):
            return _bound(self.num_labels, self.ignore_index)
        if kind == LabelKind.CTC:
            return None if self.output_rows is None else Bound(self.output_rows, negatives_ignored=True)
        return None  # regression, spans (clamped), multi-label (a length, not a range), choices (data's count)


def _bound(below: int | None, ignore: int | None = None) -> Bound | None:
    return None if below is None else Bound(below, ignore)


CLASSIFICATION_HEADS = ("ForSequenceClassification", "ForTokenClassification", "ForMultipleChoice")


def is_classification(architectures: tuple[str, ...]) -> bool:
    """Whether any architecture named is a classification head (its labels are class ids or choices)."""
    names = " ".join(architectures)
    return any(h in names for h in CLASSIFICATION_HEADS)


def num_labels_of(facts: Facts) -> tuple[int | None, str | None]:
    """(classes of the head, where that came from): the classifier's rows, id2label, num_labels, or the default."""
    cfg = facts.config
    classification = is_classification(cfg.architectures)
    clf = facts.embeddings.classifier if facts.embeddings else None
    if clf is not None and classification and "MultipleChoice" not in " ".join(cfg.architectures):
        return clf.rows, f"{clf.name} has {clf.rows} rows"
    if cfg.id2label:
        return len(cfg.id2label), f"config.json id2label has {len(cfg.id2label)} labels"
    if cfg.num_labels is not None:
        return cfg.num_labels, f"config.json num_labels is {cfg.num_labels}"
    if classification:
        return 2, "transformers' default num_labels (2)"
    return None, None


def head_label_kind(facts: Facts) -> LabelKind:
    """The label semantics of the head ``config.json``'s ``architectures`` names (the first one)."""
    cfg = facts.config
    name = cfg.architectures[0] if cfg.architectures else ""
    num_labels = cfg.num_labels if cfg.num_labels is not None else len(cfg.id2label) if cfg.id2label else None
    return label_kind(name, cfg.raw.get("problem_type"), num_labels)  # transformers saves id2label, not num_labels


def type_rows_of(facts: Facts) -> tuple[int, str, dict[str, Any]] | None:
    """(token-type rows, what says so, where) or None: the checkpoint's table, else config.json's
    ``type_vocab_size`` when no weights were read."""
    emb = facts.embeddings
    if emb is not None and emb.token_type is not None:
        if emb.token_type.rows is None:
            return None
        return emb.token_type.rows, emb.token_type.name, {"file": emb.token_type.file, "tensor": emb.token_type.name}
    if facts.config.type_vocab_size is not None and not (emb and emb.input):
        return facts.config.type_vocab_size, "config.json type_vocab_size", {"file": "config.json",
                                                                              "key": "type_vocab_size"}
    return None


_DERIVED: dict[int, tuple[InputLimits, dict[str, str]]] = {}  # id(facts) -> its limits, while the facts live


def input_limits(facts: Facts) -> tuple[InputLimits, dict[str, str]]:
    """The limits of the checkpoint ``facts`` describe, and why any limit is unknown (limit -> reason).

    Derived once per ``Facts`` (an audit's rules and its dataset scan all ask; the derivation reads the class
    tables and the tokenizer's specials): kept while the facts live, dropped when they are collected."""
    key = id(facts)
    found = _DERIVED.get(key)
    if found is None:
        found = _DERIVED[key] = derive_limits(facts)
        weakref.finalize(facts, _DERIVED.pop, key, None)
    return found[0], dict(found[1])


def derive_limits(facts: Facts) -> tuple[InputLimits, dict[str, str]]:
    """The derivation behind :func:`input_limits` (every call derives again)."""
    from .positions import usable_positions

    cfg, emb, tok = facts.config, facts.embeddings, facts.tokenizer
    missing: dict[str, str] = {}
    input_rows = emb.input_rows if emb and emb.input_rows else cfg.vocab_size
    output_rows = emb.output_rows if emb and emb.output_rows else input_rows
    if input_rows is None:
        missing["input_rows"] = facts.missing.get("input_embedding", "no embeddings and no config vocab_size")
    types = type_rows_of(facts)
    usable = usable_positions(facts)
    rotary = cfg.max_position_embeddings if usable is None and cfg.has_rotary else None
    num_labels, labels_source = num_labels_of(facts)
    kind = head_label_kind(facts)
    if kind == LabelKind.CTC and cfg.vocab_size is not None:
        output_rows = cfg.vocab_size  # a CTC head compares its labels with config.vocab_size before the loss
    eos = pad = None
    if tok is not None:
        eos, pad = tok.special_tokens.get("eos", (None, None))[1], tok.special_tokens.get("pad", (None, None))[1]
    ids = cfg.special.ids
    eos = eos if eos is not None else (ids.get("eos_token_id") or (None,))[0]
    pad = pad if pad is not None else (ids.get("pad_token_id") or (None,))[0]
    limits = InputLimits(
        input_rows=input_rows,
        output_rows=output_rows,
        type_vocab_size=types[0] if types else None,
        positions=usable[0] if usable else None,
        rotary_positions=rotary,
        num_labels=num_labels,
        tokenizer_max_id=tok.max_id if tok else None,
        eos_id=eos if eos is not None and eos == pad else None,
        label_kind=kind,
        sources=tuple((name, why) for name, why in (
            ("positions", usable[1] if usable else None), ("type_vocab_size", types[1] if types else None),
            ("num_labels", labels_source)) if why is not None),
    )
    return limits, missing
