"""Column roles: which columns hold token ids, text, class labels or language-model labels.

Detected from column names, Arrow types and ``ClassLabel`` features, decided for labels by the
model's architecture; ``--text-column`` / ``--label-column`` override detection for their role.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ..facts.limits import CLASSIFICATION_HEADS, LM_HEADS, LabelKind
from .arrays import is_integer_like, is_list
from .checks import (
    ATTENTION_MASK,
    CHOICE_LABEL,
    CLASS_LABEL,
    CTC_LABELS,
    INPUT_IDS,
    LABEL_VECTOR,
    LM_LABELS,
    POSITION_IDS,
    TEXT,
    TOKEN_TYPE_IDS,
)
from .summary import ColumnRole

LABEL_NAMES = ("label", "labels", "label_ids", "ner_tags", "pos_tags", "chunk_tags")
TEXT_NAMES = (
    "text", "sentence", "sentence1", "sentence2", "content", "document", "review", "prompt", "completion",
    "question", "context", "premise", "hypothesis", "source", "target", "input", "output", "query", "response",
)  # fmt: skip
# Names the trainers read that the scan does not (yet) check: conversational and preference data (TRL).
TRAINER_NAMES = ("messages", "conversations", "chosen", "rejected", "prompt", "completion", "tools")
# String or integer columns whose name says "class": under a classification head the hint is --label-column.
LABELISH_NAMES = ("category", "class", "classes", "intent", "sentiment", "topic", "emotion", "tag", "tags", "y",
                  "gold", "gold_label", "answer_label", "stance", "polarity")
# Label columns read by the head whose values have no class range (regression, multi-label): nothing to check.
FLOAT_MULTILABEL = "multi-label float targets (BCE): no class range to check"
FLOAT_REGRESSION = "float labels: regression targets have no class range to check"
REGRESSION_TARGETS = "regression head (num_labels 1 or problem_type regression): numbers, no class range to check"
QA_POSITIONS = ("question-answering positions: transformers clamps start/end positions to the sequence length, "
                "so none is out of range")
NO_RANGE_REASONS = (FLOAT_MULTILABEL, FLOAT_REGRESSION, REGRESSION_TARGETS)
QA_NAMES = ("start_positions", "end_positions")
# The head names that decide what labels are: one list, in facts.limits (CLASSIFICATION_HEADS, LM_HEADS).


@dataclass(frozen=True)
class Unchecked:
    """A column that has a role but cannot be checked (wrong type, nested, mixed types)."""

    column: str
    role: str
    reason: str


@dataclass(frozen=True)
class SplitColumns:
    columns: tuple[ColumnRole, ...]
    unchecked: tuple[Unchecked, ...]  # reported as findings (HVA530)
    skipped: tuple[tuple[str, str], ...]  # (column, reason): columns with no role


def head_kind(architectures: tuple[str, ...]) -> str | None:
    """"classification", "lm" or None (a base model: labels decided by column type alone)."""
    names = " ".join(architectures)
    if any(h in names for h in CLASSIFICATION_HEADS):
        return "classification"
    if any(h in names for h in LM_HEADS):
        return "lm"
    return None


def id_role(name: str) -> str | None:
    if name == "input_ids" or name.endswith("_input_ids"):
        return INPUT_IDS
    if name == "token_type_ids" or name.endswith("_token_type_ids"):
        return TOKEN_TYPE_IDS
    if name == "attention_mask" or name.endswith("_attention_mask"):
        return ATTENTION_MASK
    if name == "position_ids" or name.endswith("_position_ids"):
        return POSITION_IDS
    return None


def _is_string(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def _describe(t: pa.DataType) -> str:
    if str(t).startswith("extension<arrow.json"):
        return "mixed value types (numbers and strings in one column)"
    return f"type {t}"


def _int_list(t: pa.DataType) -> bool:
    return is_list(t) and is_integer_like(t.value_type)


def _class_names(feature: Any) -> tuple[str, ...] | None:
    """Names of a ClassLabel feature, or of a sequence of ClassLabel (token classification)."""
    for candidate in (feature, getattr(feature, "feature", None)):
        names = getattr(candidate, "names", None)
        if type(candidate).__name__ == "ClassLabel" and names:
            return tuple(names)
    return None


def _numeric(t: pa.DataType) -> bool:
    return is_integer_like(t) or pa.types.is_floating(t)


def _head_label_plan(name: str, t: pa.DataType, kind: LabelKind | None,
                     input_ids: str | None) -> ColumnRole | tuple[str, str] | None:
    """The plan of a label column as a head whose loss is not cross entropy over classes reads it (None: the
    class-id and language-model plans below). Each case is measured by running the head on CPU."""
    if kind == LabelKind.REGRESSION and (_numeric(t) or (is_list(t) and _numeric(t.value_type))):
        return (name, REGRESSION_TARGETS)  # MSE on any number: integer targets included
    if kind == LabelKind.MULTI_LABEL and (_numeric(t) or (is_list(t) and _numeric(t.value_type))):
        return ColumnRole(name, LABEL_VECTOR)  # BCE needs num_labels values per row: the length is checked
    if kind == LabelKind.CLASSES and _int_list(t):
        # a sequence classifier reads integer labels as one class id per row (cross entropy): a list per row
        # (multi-hot, or class ids) raises "Expected input batch_size (B) to match target batch_size (B*K)"
        return ColumnRole(name, LABEL_VECTOR)
    if kind == LabelKind.CHOICES and is_integer_like(t):
        return ColumnRole(name, CHOICE_LABEL, input_ids_column=input_ids)
    if kind == LabelKind.CTC and _int_list(t):
        return ColumnRole(name, CTC_LABELS)
    return None


def _label_plan(name: str, t: pa.DataType, head: str | None, names: tuple[str, ...] | None,
                input_ids: str | None, kind: LabelKind | None = None) -> ColumnRole | Unchecked | tuple[str, str]:
    """The column's plan, an Unchecked (a finding), or (column, reason) when there is nothing to check."""
    by_head = _head_label_plan(name, t, kind, input_ids)
    if by_head is not None:
        return by_head
    if names is not None:
        return ColumnRole(name, CLASS_LABEL, names)
    if _int_list(t):
        if head == "classification" or name in ("ner_tags", "pos_tags", "chunk_tags"):
            return ColumnRole(name, CLASS_LABEL)  # token classification: one class per token
        return ColumnRole(name, LM_LABELS, input_ids_column=input_ids)
    if is_list(t) and pa.types.is_floating(t.value_type):
        return (name, FLOAT_MULTILABEL)
    if is_list(t):
        return Unchecked(name, "labels", f"{_describe(t)}: expected one integer per row or a list of integers")
    if is_integer_like(t) or _is_string(t):
        return ColumnRole(name, CLASS_LABEL)
    if pa.types.is_floating(t):
        return (name, FLOAT_REGRESSION)
    return Unchecked(name, "labels", f"{_describe(t)}: expected integers or strings")


def plan_columns(
    schema: pa.Schema,
    features: Any,
    architectures: tuple[str, ...],
    *,
    text_columns: tuple[str, ...] = (),
    label_columns: tuple[str, ...] = (),
    label_kind: LabelKind | None = None,
) -> SplitColumns:
    """Roles for the columns of one split (flags already checked to exist somewhere); ``label_kind`` is what
    the head's loss reads (``facts.limits.head_label_kind``)."""
    head = head_kind(architectures)
    plans: list[ColumnRole] = []
    unchecked: list[Unchecked] = []
    skipped: list[tuple[str, str]] = []
    columns = {f.name: f.type for f in schema}
    has_ids = "input_ids" in columns
    input_ids = "input_ids" if has_ids else None
    for name, t in columns.items():
        feature = features.get(name) if features is not None and hasattr(features, "get") else None
        names = _class_names(feature)
        role = id_role(name)
        if name in text_columns:
            if _is_string(t):
                plans.append(ColumnRole(name, TEXT))
            else:
                unchecked.append(Unchecked(name, "text", f"{_describe(t)}: --text-column needs strings"))
        elif name in label_columns or (not label_columns and (name in LABEL_NAMES or names is not None)):
            result = _label_plan(name, t, head, names, input_ids, label_kind)
            if isinstance(result, ColumnRole):
                plans.append(result)
            elif isinstance(result, Unchecked):
                unchecked.append(result)
            else:
                skipped.append(result)
        elif role is not None:
            if _int_list(t) or is_integer_like(t):
                plans.append(ColumnRole(name, role))
            elif label_kind == LabelKind.CHOICES and is_list(t) and _int_list(t.value_type):
                plans.append(ColumnRole(name, role, nested=True))  # choices x length, as the head reads them
            elif is_list(t) and is_list(t.value_type):
                unchecked.append(Unchecked(name, role, f"nested lists ({t}): expected one list of ids per row"))
            else:
                unchecked.append(Unchecked(name, role, f"{_describe(t)}: expected a list of integer ids per row"))
        elif label_kind == LabelKind.SPANS and name in QA_NAMES:
            skipped.append((name, QA_POSITIONS))
        elif _is_string(t):
            if text_columns:
                skipped.append((name, "string column not named by --text-column"))
            elif has_ids:
                skipped.append((name, "text not tokenized: the split already has input_ids"))
            elif name in TEXT_NAMES:
                plans.append(ColumnRole(name, TEXT))
            elif head == "classification" and name.lower() in LABELISH_NAMES:
                skipped.append((name, f"string column with no known role (pass --label-column {name} if it holds the "
                                      f"classes, or --text-column {name} to tokenize it)"))
            else:
                skipped.append((name, f"string column with no known role (pass --text-column {name} to tokenize it)"))
        elif head == "classification" and name.lower() in LABELISH_NAMES and is_integer_like(t):
            skipped.append((name, f"no role for a column of {_describe(t)} (pass --label-column {name} if it holds "
                                  "the classes)"))
        else:
            skipped.append((name, f"no role for a column of {_describe(t)}"))
    return SplitColumns(tuple(plans), tuple(unchecked), tuple(skipped))
