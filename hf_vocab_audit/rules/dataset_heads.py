"""HVA56x: labels of heads whose loss is not cross entropy over ``num_labels`` classes (``--dataset``).

What each head's loss accepts is decided once, in ``facts.limits`` (``LabelKind``), the way transformers
decides it: multi-label vectors, multiple-choice indices, CTC targets. The training guard reports the same
codes for a live batch. Regression targets and question-answering positions (clamped by transformers)
have no range, and no rule.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..core.findings import Severity
from ..dataset import checks as k
from .dataset_hits import dataset_hit, each_violation
from .registry import Hit, Scope, rule

if TYPE_CHECKING:
    from ..dataset.scan import DatasetFacts


@rule("HVA560", "dataset-multi-label-vector-length", Severity.ERROR, scope=Scope.DATASET)
def dataset_multi_label_vector_length(df: DatasetFacts) -> Iterator[Hit]:
    """A multi-label head's `labels` are not vectors of `num_labels` values.

    Why:
    With `problem_type="multi_label_classification"` the head computes `BCEWithLogitsLoss(logits, labels)`:
    a vector of another length (labels built for another label set, or one class id per row) raises
    `Target size (torch.Size([B, K])) must be the same as input size (torch.Size([B, N]))`.

    Fix:
    Build each row's labels as a multi-hot vector of `num_labels` floats, or load the model with the
    `num_labels` of the data.
    """
    n = df.limits.num_labels
    for source, split, column, v in each_violation(df, k.LABEL_VECTOR_LENGTH):
        yield dataset_hit(source, split, column, v, f"not {n} values long (num_labels {n}; value = the row's length)",
                          num_labels=n)


@rule("HVA561", "dataset-choice-label-out-of-range", Severity.ERROR, scope=Scope.DATASET)
def dataset_choice_label_out_of_range(df: DatasetFacts) -> Iterator[Hit]:
    """A multiple-choice label is not an index into the row's choices (nor the ignore index -100).

    Why:
    A multiple-choice head scores each of the row's choices (`input_ids` are choices x length) and takes
    cross entropy over those scores: a label >= the number of choices raises `Target N is out of bounds`
    (a device-side assert on a GPU). `num_labels` plays no part.

    Fix:
    Number the correct choice from 0 (`label = answer_index`, not the 1-based option number).
    """
    for source, split, column, v in each_violation(df, k.CHOICE_OUT_OF_RANGE):
        yield dataset_hit(source, split, column, v, "outside 0..choices-1 (the choices are the row's input_ids lists)")


@rule("HVA562", "dataset-ctc-label-out-of-range", Severity.ERROR, scope=Scope.DATASET)
def dataset_ctc_label_out_of_range(df: DatasetFacts) -> Iterator[Hit]:
    """CTC `labels` hold ids >= the CTC head's rows (`vocab_size` of the config).

    Why:
    A CTC head checks its targets before the loss and raises `ValueError: Label values must be <=
    vocab_size`. Negative labels are padding (masked out) and the blank is the pad id: neither is an error.

    Fix:
    Encode the transcripts with the model's own processor (its tokenizer's ids fit the head), and pad
    the targets with -100.
    """
    rows = df.limits.output_rows
    for source, split, column, v in each_violation(df, k.CTC_LABEL_TOO_LARGE):
        yield dataset_hit(source, split, column, v, f">= the {rows} rows of the CTC head (vocab_size)",
                          output_rows=rows)


@rule("HVA563", "dataset-multi-label-integer-targets", Severity.ERROR, scope=Scope.DATASET)
def dataset_multi_label_integer_targets(df: DatasetFacts) -> Iterator[Hit]:
    """A sequence classifier's `labels` are integer (or boolean) vectors: multi-hot, or lists of class ids.

    Why:
    The Trainer's collators (`DataCollatorWithPadding`, and `default_data_collator` for a `labels` column)
    make an int64 tensor of integer lists. With `problem_type="multi_label_classification"`,
    `BCEWithLogitsLoss` raises `RuntimeError: result type Float can't be cast to the desired output type Long`
    (booleans: `Subtraction, the - operator, with two bool tensors is not supported`) at the first batch.
    Without it, transformers reads integer labels as one class id per example and cross entropy raises
    `Expected input batch_size (B) to match target batch_size (B*K)`. Only `default_data_collator` reading
    a column named `label` converts the lists to float.

    Fix:
    Store the vectors as floats (`dataset.cast_column("labels", Sequence(Value("float32")))`) and load the
    model with `problem_type="multi_label_classification"`; lists of class ids become multi-hot vectors of
    `num_labels` floats first.
    """
    for source, split, column, v in each_violation(df, k.LABEL_VECTOR_INTEGER):
        yield dataset_hit(source, split, column, v, "are integer vectors (value = the row's length); a "
                          "sequence classifier's loss needs one class id per row, or float multi-hot vectors")


@rule("HVA564", "dataset-multi-label-target-outside-0-1", Severity.WARNING, scope=Scope.DATASET)
def dataset_multi_label_target_outside_0_1(df: DatasetFacts) -> Iterator[Hit]:
    """A multi-label target is outside 0..1 (a class count, an id, or -100 used as "ignore").

    Why:
    `BCEWithLogitsLoss` takes each target as a probability and checks nothing: a target of 2 or -100 runs,
    but the loss has no minimum there (it goes below 0 and keeps falling as the logit grows), so training
    pushes that logit without bound. Nothing is ignored: -100 is not an ignore index for this loss.

    Fix:
    Build multi-hot vectors of 0.0 and 1.0 (or soft targets within 0..1); drop "ignore" markers, or mask
    them with a custom loss.
    """
    for source, split, column, v in each_violation(df, k.LABEL_VECTOR_OUTSIDE):
        yield dataset_hit(source, split, column, v, "outside 0..1 (BCEWithLogitsLoss reads them as probabilities)")
