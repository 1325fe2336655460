"""HVA4xx: classification heads and their labels."""

from __future__ import annotations

from collections.abc import Iterator

from ..core.findings import Location, Severity
from ..facts import Facts
from .registry import Hit, rule


@rule("HVA401", "classifier-label-mismatch", Severity.ERROR)
def classifier_label_mismatch(facts: Facts) -> Iterator[Hit]:
    """`num_labels`, `id2label`, `label2id` and the classifier's rows disagree.

    Why:
    The classifier emits one logit per row; cross entropy raises `Target N is out of bounds`
    (`t >= 0 && t < n_classes` on a GPU) for a label >= its rows. `id2label` decides how predictions
    are named and `label2id` how datasets are encoded: when they are not inverses, or have holes,
    labels silently mean different classes in training and in use.

    Fix:
    Make `id2label` cover exactly 0..N-1, `label2id` its inverse, and the head N rows
    (`AutoModelForSequenceClassification.from_pretrained(..., num_labels=N, id2label=..., label2id=...)`).
    """
    cfg = facts.config
    id2label, label2id = cfg.id2label, cfg.label2id
    head = facts.embeddings.classifier if facts.embeddings else None
    if "MultipleChoice" in " ".join(cfg.architectures):
        head = None  # one logit per choice, not per label
    if id2label is not None:
        n = len(id2label)
        if sorted(id2label) != list(range(n)):
            yield Hit(
                f"config.json id2label ids are {sorted(id2label)[:10]}, not 0..{n - 1}",
                Location(file="config.json", key="id2label"),
                details={"ids": sorted(id2label)},
            )
        if label2id is not None:
            inverse = {name: i for i, name in id2label.items()}
            if inverse != label2id:
                diff = sorted(set(inverse.items()) ^ set(label2id.items()))[:6]
                yield Hit(
                    f"config.json label2id is not the inverse of id2label (differing pairs: {diff})",
                    Location(file="config.json", key="label2id"),
                    details={"id2label": {str(k): v for k, v in sorted(id2label.items())}, "label2id": label2id},
                )
        if cfg.num_labels is not None and cfg.num_labels != n:
            yield Hit(
                f"config.json num_labels is {cfg.num_labels} but id2label has {n} labels",
                Location(file="config.json", key="num_labels"),
                details={"num_labels": cfg.num_labels, "id2label": n},
            )
    labels = len(id2label) if id2label is not None else cfg.num_labels
    if head is not None and labels is not None and head.rows != labels:
        yield Hit(
            f"{head.name} has {head.rows} rows but config.json declares {labels} labels",
            Location(file=head.file, tensor=head.name, key="id2label"),
            details={"rows": head.rows, "labels": labels},
        )
