"""HVA52x: language-model labels of a streamed dataset against the lm_head (``--dataset``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..core.findings import Severity
from ..dataset import checks as k
from .dataset_hits import column_role, dataset_hit, each_violation
from .registry import Hit, Scope, rule

if TYPE_CHECKING:
    from ..dataset.scan import DatasetFacts


@rule("HVA520", "dataset-lm-label-out-of-range", Severity.ERROR, scope=Scope.DATASET)
def dataset_lm_label_out_of_range(df: DatasetFacts) -> Iterator[Hit]:
    """Language-model `labels` hold ids >= the output-embedding (lm_head) rows, or negatives other than -100.

    Why:
    Cross entropy over the vocabulary logits raises `IndexError: Target N is out of bounds` on CPU and
    `t >= 0 && t < n_classes` (a device-side assert) on a GPU.

    Fix:
    Build labels from input_ids of the model's own tokenizer and mask with -100 only.
    """
    rows = df.limits.output_rows
    for source, split, column, v in each_violation(df, k.LM_LABEL_TOO_LARGE):
        yield dataset_hit(source, split, column, v, f">= the {rows} output-embedding rows or negative other than -100",
                   output_rows=rows)


@rule("HVA521", "dataset-lm-labels-all-masked", Severity.WARNING, scope=Scope.DATASET)
def dataset_lm_labels_all_masked(df: DatasetFacts) -> Iterator[Hit]:
    """Rows whose `labels` are all -100: nothing to learn from them.

    Why:
    Every target is ignored; a batch made only of such rows gives a `nan` loss. Usual causes: prompts
    longer than max_length so the completion was truncated away, or a masking template that matched
    nothing.

    Fix:
    Drop those rows (`ds.filter(lambda x: any(l != -100 for l in x["labels"]))`) or raise max_length.
    """
    for source, split, column, v in each_violation(df, k.ALL_MASKED):
        yield dataset_hit(source, split, column, v, "with every label -100 (value = row length)")


@rule("HVA522", "dataset-eos-label-masked", Severity.WARNING, scope=Scope.DATASET)
def dataset_eos_label_masked(df: DatasetFacts) -> Iterator[Hit]:
    """End-of-sequence tokens get no loss because pad == eos and padding is masked.

    Why:
    With `pad_token = eos_token`, collators (DataCollatorForLanguageModeling) set every pad position,
    hence every eos, to -100: the model never learns to stop (transformers #23530, trl #976).

    Fix:
    Use a distinct pad token (`tokenizer.pad_token = "<|pad|>"` or an unused reserved token), or keep the
    eos label when masking padding.
    """
    eos = df.limits.eos_id
    for source, split, column, v in each_violation(df, k.EOS_MASKED):
        role = column_role(df, source, split, column)
        what = (f"are eos (id {eos}) labelled -100" if role == k.LM_LABELS
                else f"are eos (id {eos}) that a collator will label -100 because pad == eos")
        yield dataset_hit(source, split, column, v, what, eos_token_id=eos)
