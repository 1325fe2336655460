"""HVA51x: class labels of a streamed dataset against the classification head (``--dataset``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..core.findings import Location, Severity
from ..dataset import checks as k
from .dataset_hits import TOP, column_role, dataset_hit, each_violation, where
from .registry import Hit, Scope, rule

if TYPE_CHECKING:
    from ..dataset.scan import DatasetFacts


def _label_values(df: DatasetFacts, source: str, column: str, split: str | None = None) -> dict[Any, list]:
    """value -> [count, (split, first row, first position)] over the splits of ``source`` (one split if given)."""
    out: dict[Any, list] = {}
    for (src, sp, col), stats in df.summary.stats.items():
        if src != source or col != column or (split is not None and sp != split) or not stats.uniques:
            continue
        if column_role(df, src, sp, col) != k.CLASS_LABEL:
            continue
        for value, (count, row, pos) in stats.uniques.items():
            entry = out.setdefault(value, [0, (sp, row, pos)])
            entry[0] += count
    return out


def _label_columns(df: DatasetFacts) -> list[tuple[str, str]]:
    return sorted({(s.source, p.name) for s in df.splits for p in s.columns if p.role == k.CLASS_LABEL})


def _classes(values: dict[Any, list]) -> list[int]:
    return sorted(v for v in values if isinstance(v, int) and v >= 0)


def _first_missing(classes: list[int], limit: int) -> list[int]:
    """The first ``limit`` integers in 0..classes[-1] absent from the sorted, distinct ``classes``: work in
    proportion to the classes seen, not to the largest value."""
    out: list[int] = []
    expected = 0
    for c in classes:
        out.extend(range(expected, min(c, expected + limit - len(out))))
        if len(out) >= limit:
            break
        expected = c + 1
    return out


def _one_based(df: DatasetFacts, source: str, column: str) -> bool:
    n = df.limits.num_labels
    classes = _classes(_label_values(df, source, column))
    return n is not None and bool(classes) and classes[0] == 1 and classes[-1] == n


@rule("HVA510", "dataset-label-out-of-range", Severity.ERROR, scope=Scope.DATASET)
def dataset_label_out_of_range(df: DatasetFacts) -> Iterator[Hit]:
    """Class labels outside `0..num_labels-1` (other than the ignore index -100).

    Why:
    Cross entropy raises `IndexError: Target N is out of bounds` on CPU and `t >= 0 && t < n_classes`
    (a device-side assert) on a GPU, at the first batch that holds such a label.

    Fix:
    Encode labels as 0..num_labels-1 once, when the dataset is built, or load the model with the
    right `num_labels` (and `id2label`/`label2id`).
    """
    n = df.limits.num_labels
    if n is None:  # no classification head: skipped_work says so
        return
    for source, split, column, v in each_violation(df, k.LABEL_OUT_OF_RANGE):
        if _one_based(df, source, column):
            continue  # HVA511 says it better
        yield dataset_hit(source, split, column, v, f"outside 0..{n - 1} (num_labels {n}: {df.num_labels_source})",
                   num_labels=n)


@rule("HVA511", "dataset-labels-one-based", Severity.ERROR, scope=Scope.DATASET)
def dataset_labels_one_based(df: DatasetFacts) -> Iterator[Hit]:
    """Class labels run 1..num_labels instead of 0..num_labels-1 (the 1-based pattern).

    Why:
    The highest class equals num_labels, which cross entropy rejects (`Target N is out of bounds`), and
    every other class is shifted by one: the model learns the wrong names even where it does not crash.

    Fix:
    Shift once, in the dataset: `ds = ds.map(lambda x: {"label": x["label"] - 1})`.
    """
    n = df.limits.num_labels
    if n is None:  # no classification head: skipped_work says so
        return
    for source, split, column, v in each_violation(df, k.LABEL_OUT_OF_RANGE):
        if not _one_based(df, source, column):
            continue
        hint = f'shift the labels once in the dataset: ds.map(lambda x: {{"{column}": x["{column}"] - 1}})'
        yield dataset_hit(source, split, column, v, f"equal to num_labels {n}: labels run 1..{n}, not 0..{n - 1}",
                   hint=hint, num_labels=n)


@rule("HVA512", "dataset-label-minus-one", Severity.ERROR, scope=Scope.DATASET)
def dataset_label_minus_one(df: DatasetFacts) -> Iterator[Hit]:
    """Class labels are -1, a common marker for "unknown" or "unlabelled".

    Why:
    Cross entropy ignores only -100; -1 raises `Target -1 is out of bounds` (a device-side assert on a
    GPU). Test splits of public datasets (GLUE) use -1 for hidden labels.

    Fix:
    Drop the unlabelled rows (`ds.filter(lambda x: x["label"] != -1)`), or use -100 where a row must
    stay but contribute no loss (token classification).
    """
    for source, split, column, v in each_violation(df, k.LABEL_MINUS_ONE):
        if df.limits.num_labels is None:
            continue
        yield dataset_hit(source, split, column, v, "are -1 (not the ignore index -100)")


@rule("HVA513", "dataset-label-holes", Severity.WARNING, scope=Scope.DATASET)
def dataset_label_holes(df: DatasetFacts) -> Iterator[Hit]:
    """The label encoding has holes: some classes between 0 and the largest label never occur.

    Why:
    Holes usually mean an encoder fitted on another subset, labels filtered after encoding, or ids
    taken from an external table. The model still reserves a logit for each missing class.

    Fix:
    Re-encode the labels densely (`ds.class_encode_column(...)`) and set num_labels/id2label to match.
    """
    for source, column in _label_columns(df):
        values = _label_values(df, source, column)
        classes = _classes(values)
        if not classes or _one_based(df, source, column):
            continue
        total = classes[-1] + 1 - len(classes)  # classes are distinct and >= 0
        if not total:
            continue
        missing = _first_missing(classes, 100)  # never range(largest label): a label of 30 million is data
        shown = ", ".join(map(str, missing[:10])) + (f" and {total - 10} more" if total > 10 else "")
        yield Hit(f"column {column!r}: classes {shown} never occur between 0 and the largest label {classes[-1]} "
                  f"({len(classes)} distinct classes in all splits)",
                  Location(file=source, column=column),
                  details={"missing": missing[:100], "classes": classes[:100]})


@rule("HVA514", "dataset-label-unseen-in-train", Severity.WARNING, scope=Scope.DATASET)
def dataset_label_unseen_in_train(df: DatasetFacts) -> Iterator[Hit]:
    """A validation/test split has labels that never occur in the train split.

    Why:
    The classic label-encoder-fitted-on-train bug: classes first met at evaluation were encoded
    differently (or past num_labels), and the model never learned them.

    Fix:
    Build the label mapping from all splits (or a fixed list) before encoding any of them.
    """
    for source, column in _label_columns(df):
        train_splits = [s.split for s in df.splits if s.source == source and s.split == "train"]
        if not train_splits:
            continue
        train = _label_values(df, source, column, "train")
        others = sorted({s.split for s in df.splits if s.source == source and s.split != "train"})
        for split in others:
            values = _label_values(df, source, column, split)
            unseen = sorted((v for v in values if v not in train and v != k.IGNORE_INDEX), key=str)
            if not unseen:
                continue
            rows = sum(values[v][0] for v in unseen)
            first = min((values[v][1][1], values[v][1][2] or 0, v) for v in unseen)
            listed = ", ".join(f"{v!r} (x{values[v][0]}, first at row {values[v][1][1]})" for v in unseen[:TOP])
            yield Hit(
                f"{where(split, column)}: {len(unseen)} label(s) in {rows} row(s) never occur in split 'train': "
                f"{listed}",
                Location(file=source, split=split, column=column, row=first[0]),
                details={"labels": [{"value": v, "count": values[v][0], "first_row": values[v][1][1]}
                                    for v in unseen[:100]]},
            )


@rule("HVA515", "dataset-label-not-in-label2id", Severity.ERROR, scope=Scope.DATASET)
def dataset_label_not_in_label2id(df: DatasetFacts) -> Iterator[Hit]:
    """String labels that `config.label2id` does not map to a class id.

    Why:
    A string label must be encoded with the model's own mapping; a name missing from `label2id` has
    no class (a KeyError in the encoding step, or a class silently mis-encoded by an ad-hoc mapping).

    Fix:
    Add the class to `id2label`/`label2id` (and the head), or fix the spelling in the data.
    """
    label2id = df.model.config.label2id
    for source, column in _label_columns(df):
        values = _label_values(df, source, column)
        strings = [v for v in values if isinstance(v, str)]
        if not strings:
            continue
        known = label2id or {}
        missing = sorted(v for v in strings if v not in known)
        if not missing:
            continue
        first = min(values[v][1] for v in missing)
        rows = sum(values[v][0] for v in missing)
        listed = ", ".join(f"{v!r} (x{values[v][0]}, first at split {values[v][1][0]!r} row {values[v][1][1]})"
                           for v in missing[:TOP])
        where = "config.json has no label2id" if label2id is None else f"label2id has {sorted(known)[:10]}"
        yield Hit(f"column {column!r}: {len(missing)} string label(s) in {rows} row(s) missing from "
                  f"config.label2id ({where}): {listed}",
                  Location(file=source, split=first[0], column=column, row=first[1]),
                  details={"missing": missing[:100], "label2id": known})


@rule("HVA516", "dataset-label-count-mismatch", Severity.WARNING, scope=Scope.DATASET)
def dataset_label_count_mismatch(df: DatasetFacts) -> Iterator[Hit]:
    """The number of classes in the data differs from the model's `num_labels`.

    Why:
    More classes than logits crash (see HVA510); fewer usually means a head sized for another dataset,
    or a config left at transformers' default `num_labels=2`.

    Fix:
    Load the model with `num_labels=<classes in the data>` and matching `id2label`/`label2id`.
    """
    n = df.limits.num_labels
    if n is None:  # no classification head: skipped_work says so
        return
    if n is None:
        return
    for source, column in _label_columns(df):
        values = _label_values(df, source, column)
        classes = [v for v in values if isinstance(v, str) or (isinstance(v, int) and v >= 0)]
        if not classes or len(classes) == n:
            continue
        shown = sorted(classes, key=str)[:10]
        yield Hit(f"column {column!r}: {len(classes)} distinct classes in the data ({shown}) but num_labels is "
                  f"{n} ({df.num_labels_source})",
                  Location(file=source, column=column),
                  details={"classes": len(classes), "num_labels": n})
