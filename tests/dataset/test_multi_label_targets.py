"""Multi-label targets as the loss reads them: integer multi-hot vectors, values outside 0..1, other widths.

Every verdict is decided by running it: the rows are read back from the Parquet file with `datasets`, batched
by the Trainer's default collator (`DataCollatorWithPadding` when a tokenizer is given) and fed to a tiny
`BertForSequenceClassification(problem_type="multi_label_classification")` on CPU with its loss. A batch that
raises is an error; one whose loss runs below 0 (BCE of a probability target never does) is silently wrong,
a warning; a batch that runs with a loss >= 0 must be quiet.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
import transformers
from builders import TINY, make_tokenizer
from dataset_builders import write_parquet

from hf_vocab_audit import audit

ROWS = 40
NUM_LABELS = 3
CODES = ("HVA510", "HVA516", "HVA517", "HVA560", "HVA563", "HVA564")


def _model(folder: Path, problem_type: str | None = "multi_label_classification") -> Path:
    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=ROWS, max_position_embeddings=64, pad_token_id=0, num_labels=NUM_LABELS,
                                  problem_type=problem_type, **TINY)
    transformers.BertForSequenceClassification(cfg).save_pretrained(folder)
    make_tokenizer(folder, ROWS, style="bert")
    return folder


@pytest.fixture(scope="module")
def multi_label(tmp_path_factory) -> Path:
    return _model(tmp_path_factory.mktemp("multi-label"))


def _run(folder: Path, data: Path, collator: str = "padding") -> str:
    """'raises: <type>', 'negative loss', or 'runs': the dataset through a collator and the head's loss."""
    import datasets

    rows = list(datasets.load_dataset("parquet", data_files=str(data), split="train"))
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    collate = (transformers.DataCollatorWithPadding(tok) if collator == "padding"
               else transformers.default_data_collator)
    model = transformers.BertForSequenceClassification.from_pretrained(folder).eval()
    try:
        batch = collate(rows)
        with torch.no_grad():
            loss = model(**batch).loss
    except (RuntimeError, ValueError, IndexError) as exc:
        return f"raises: {type(exc).__name__}"
    if model.config.problem_type != "multi_label_classification":  # cross entropy over class ids ran
        return "runs"
    # a logit of +-50 towards each row's own targets: where a target is no probability the loss goes below 0
    logits = torch.where(batch["labels"].float() > 0.5, 50.0, -50.0)
    pushed = torch.nn.functional.binary_cross_entropy_with_logits(logits, batch["labels"].float())
    assert loss is not None and loss.item() >= 0 or pushed.item() < 0
    return "negative loss" if pushed.item() < 0 else "runs"


def _audit(folder: Path, data: Path) -> tuple[dict[str, str], int]:
    report = audit(folder, datasets=[str(data)])
    return {f.code: f.severity.value for f in report.findings if f.code in CODES}, report.exit_code()


def _data(tmp_path: Path, labels: list[Any], name: str = "labels", type_: Any = None) -> Path:
    import pyarrow as pa

    ids = [[2, 5 + i, 6 + i, 3] for i in range(len(labels))]
    column = pa.array(labels, type=type_) if type_ is not None else labels
    return write_parquet(tmp_path / "train.parquet", {"input_ids": ids, name: column})


HEALTHY = [
    ("float multi-hot", [[1.0, 0.0, 1.0], [0.0, 0.0, 0.0], [0.0, 1.0, 0.0]]),
    ("soft targets within 0..1", [[0.9, 0.1, 0.5], [0.0, 0.25, 1.0]]),
]


@pytest.mark.parametrize(("name", "labels"), HEALTHY, ids=[h[0] for h in HEALTHY])
def test_healthy_float_vectors_run_and_are_quiet(multi_label, tmp_path, name, labels) -> None:
    data = _data(tmp_path, labels)
    assert _run(multi_label, data) == "runs"
    assert _audit(multi_label, data) == ({}, 0)


def test_integer_multi_hot_vectors_raise_in_the_loss_and_are_an_error(multi_label, tmp_path) -> None:
    data = _data(tmp_path, [[1, 0, 1], [0, 0, 0], [0, 1, 0]])
    assert _run(multi_label, data) == "raises: RuntimeError"  # result type Float can't be cast to ... Long
    findings, code = _audit(multi_label, data)
    assert findings == {"HVA563": "error"} and code == 1
    report = audit(multi_label, datasets=[str(data)])
    (hit,) = [f for f in report.findings if f.code == "HVA563"]
    assert hit.details["rows"] == 3 and hit.location.column == "labels"


def test_a_singular_label_column_through_default_data_collator_is_the_one_path_that_runs(multi_label,
                                                                                          tmp_path) -> None:
    """default_data_collator turns a `label` of int lists into floats, but the Trainer's default with a tokenizer
    (DataCollatorWithPadding) and any `labels` column stay int64: the rule names that one exception in its text."""
    data = _data(tmp_path, [[1, 0, 1], [0, 1, 0]], name="label")
    assert _run(multi_label, data, "default") == "runs"
    assert _run(multi_label, data, "padding") == "raises: RuntimeError"
    plain = _data(tmp_path / "plain", [[1, 0, 1], [0, 1, 0]])
    assert _run(multi_label, plain, "default") == "raises: RuntimeError"
    assert _audit(multi_label, data)[0] == {"HVA563": "error"}


def test_boolean_vectors_raise_too(multi_label, tmp_path) -> None:
    import pyarrow as pa

    data = _data(tmp_path, [[True, False, True], [False, True, False]], type_=pa.list_(pa.bool_()))
    assert _run(multi_label, data) == "raises: RuntimeError"  # bool subtraction
    assert _audit(multi_label, data) == ({"HVA563": "error"}, 1)


def test_values_outside_0_1_run_with_a_loss_that_has_no_minimum(multi_label, tmp_path) -> None:
    """Floats 2.0 and -100.0 (an "ignore" marker BCE does not know) run: silently wrong, a warning."""
    data = _data(tmp_path, [[1.0, 0.0, 2.0], [0.0, -100.0, 1.0], [1.0, 0.0, 0.0]])
    assert _run(multi_label, data) == "negative loss"
    report = audit(multi_label, datasets=[str(data)])
    (hit,) = [f for f in report.findings if f.code == "HVA564"]
    assert hit.severity.value == "warning" and hit.details["rows"] == 2
    assert [(loc["row"], loc["position"], loc["value"]) for loc in hit.details["locations"]] == [(0, 2, 2.0),
                                                                                                (1, 1, -100.0)]
    assert {f.code for f in report.findings if f.code in CODES} == {"HVA564"}


def test_integer_vectors_with_other_values_are_both(multi_label, tmp_path) -> None:
    data = _data(tmp_path, [[1, 0, 2], [0, 1, 0]])
    assert _run(multi_label, data) == "raises: RuntimeError"
    assert _audit(multi_label, data) == ({"HVA563": "error", "HVA564": "warning"}, 1)


@pytest.mark.parametrize("labels", [[[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0]], [[1, 0, 1, 0], [0, 1, 0, 1]]],
                         ids=["float", "int"])
def test_a_width_other_than_num_labels_raises_first(multi_label, tmp_path, labels) -> None:
    """The loss compares shapes before dtypes: a 4-wide vector for 3 labels is a ValueError either way."""
    data = _data(tmp_path, labels)
    assert _run(multi_label, data) == "raises: ValueError"
    findings, code = _audit(multi_label, data)
    assert findings.get("HVA560") == "error" and code == 1
    assert ("HVA563" in findings) is isinstance(labels[0][0], int)


def test_integer_vectors_without_problem_type_are_class_ids_and_raise(tmp_path) -> None:
    """problem_type unset: transformers reads int64 labels as class ids (cross entropy), so a vector per row
    raises; float vectors make it infer multi-label and run. One class id per row in a list of one runs too."""
    folder = _model(tmp_path / "model", problem_type=None)
    ints = _data(tmp_path / "ints", [[1, 0, 1], [0, 0, 0], [0, 1, 0]])
    assert _run(folder, ints) == "raises: ValueError"  # Expected input batch_size (3) to match target (9)
    findings, code = _audit(folder, ints)
    assert findings == {"HVA563": "error"} and code == 1
    floats = _data(tmp_path / "floats", [[1.0, 0.0, 1.0], [0.0, 0.0, 0.0]])
    assert _run(folder, floats) == "runs"
    assert _audit(folder, floats) == ({}, 0)
    singles = _data(tmp_path / "singles", [[2], [0], [1]])
    assert _run(folder, singles) == "runs"
    assert _audit(folder, singles) == ({}, 0)
