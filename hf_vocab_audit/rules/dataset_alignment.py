"""HVA517: per-row alignment of per-token labels with input_ids in a dataset."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..core.findings import Location, Severity
from ..dataset import checks as k
from .registry import Hit, Scope, rule

if TYPE_CHECKING:
    from ..dataset.scan import DatasetFacts


def _lengths(value: object) -> tuple[int, int]:
    labels, _, ids = str(value).partition("/")
    return int(labels), int(ids)


@rule("HVA517", "dataset-label-length-mismatch", Severity.ERROR, scope=Scope.DATASET)
def dataset_label_length_mismatch(df: DatasetFacts) -> Iterator[Hit]:
    """Rows whose per-token `labels` (token classification, or a causal LM's labels) are not as long as
    their `input_ids`.

    Why:
    Labels are matched to tokens position by position. A row whose labels are longer than its inputs (the
    inputs were truncated, the labels not) makes a ragged batch: the collator or the loss fails
    (`Expected input batch_size (5) to match target batch_size (7)`); a shorter one is padded with -100 by
    `DataCollatorForTokenClassification` and trains every token after the gap on the wrong label.

    Fix:
    Truncate and pad the labels with the inputs: tokenize with `truncation=True` and build the labels from
    `word_ids()` of that same encoding (the token-classification recipe), or `labels = labels[:len(input_ids)]`.
    """
    for (source, split, column, check), v in sorted(df.summary.violations.items(), key=lambda kv: kv[0]):
        if check != k.LENGTH_MISMATCH:
            continue
        shown = []
        longer = 0
        for row, _pos, value in v.locations:
            labels, ids = _lengths(value)
            shown.append(f"row {row} (labels {labels}, input_ids {ids})")
        counts = v.top.items() if v.top else [(val, 1) for _r, _p, val in v.locations]
        for value, count in counts:
            labels, ids = _lengths(value)
            longer += count if labels > ids else 0
        cause = ("; likely cause: truncation applied to the inputs only" if longer
                 else "; the labels were built for another tokenization")
        row = v.locations[0][0]
        yield Hit(
            f"split {split!r} column {column!r}: {v.rows} row(s) whose labels are not as long as input_ids; "
            f"first at {'; '.join(shown)}{cause}",
            Location(file=source, split=split, column=column, row=row),
            details={"rows": v.rows, "labels_longer_rows": longer,
                     "locations": [{"row": r, "labels_length": _lengths(val)[0], "input_ids_length": _lengths(val)[1]}
                                   for r, _p, val in v.locations]},
        )
