"""The issue's acceptance cases on the real all-MiniLM-L6-v2 checkpoint with a 3-class head."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from dataset_builders import write_jsonl, write_parquet

from hf_vocab_audit import audit

SENTENCES = ["the movie was great", "a dull and tedious film", "it was fine, nothing more", "loved every minute"]


def _labelled(folder, train_labels, test_labels=None):
    write_jsonl(folder / "train.jsonl", [{"text": SENTENCES[i % 4], "label": v} for i, v in enumerate(train_labels)])
    if test_labels is not None:
        write_jsonl(folder / "test.jsonl", [{"text": SENTENCES[i % 4], "label": v} for i, v in enumerate(test_labels)])
    return folder


def _found(report):
    return {f.code: f for f in report.findings if f.code.startswith("HVA5")}


def test_labels_0_to_2_are_clean(minilm_cls, tmp_path):
    data = _labelled(tmp_path, [0, 1, 2, 1, 0, 2], [2, 1, 0])
    report = audit(minilm_cls, datasets=[data])
    assert _found(report) == {}
    split = {s["split"]: s for s in report.to_dict()["dataset"]["splits"]}
    assert split["train"]["columns"]["label"]["unique_values"] == [
        {"value": 0, "count": 2}, {"value": 1, "count": 2}, {"value": 2, "count": 2}]
    assert split["train"]["columns"]["text"]["tokens"] > 0


def test_one_based_labels_fire_with_rows(minilm_cls, tmp_path):
    report = audit(minilm_cls, datasets=[_labelled(tmp_path, [1, 2, 3, 1, 3, 2])])
    f = _found(report)["HVA511"]
    assert [loc["row"] for loc in f.details["locations"]] == [2, 4]
    assert "2 value(s) in 2 row(s) equal to num_labels 3" in f.message


def test_minus_one_fires_with_rows(minilm_cls, tmp_path):
    report = audit(minilm_cls, datasets=[_labelled(tmp_path, [0, 1, 2, 0], [0, -1, 2, -1, -1])])
    f = _found(report)["HVA512"]
    assert f.location.split == "test"
    assert [loc["row"] for loc in f.details["locations"]] == [1, 3, 4]


def test_test_only_class_fires_with_row(minilm_cls, tmp_path):
    report = audit(minilm_cls, datasets=[_labelled(tmp_path, [0, 1, 0, 1], [1, 0, 0, 2])])
    f = _found(report)["HVA514"]
    assert (f.location.split, f.location.row) == ("test", 3)
    assert "2 (x1, first at row 3)" in f.message


def test_one_bad_id_in_50000_rows_is_found(minilm_cls, tmp_path):
    rng = np.random.default_rng(0)
    lengths = rng.integers(8, 24, size=50_000)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    ids = rng.integers(1000, 30000, size=int(offsets[-1])).astype(np.int32)
    ids[offsets[41] + 5] = 30522  # row 41, position 5: one past the 30522 embedding rows
    column = pa.ListArray.from_arrays(pa.array(offsets), pa.array(ids))
    data = write_parquet(tmp_path / "tokenized.parquet", {"input_ids": column, "label": rng.integers(0, 3, 50_000)})
    report = audit(minilm_cls, datasets=[data])
    found = _found(report)
    assert set(found) == {"HVA501"}
    f = found["HVA501"]
    assert (f.location.row, f.location.position) == (41, 5)
    assert "1 value(s) in 1 row(s) >= the 30522 rows of bert.embeddings.word_embeddings.weight" in f.message
    assert report.to_dict()["dataset"]["rows_scanned"] == 50_000
