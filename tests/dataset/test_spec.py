"""Opening SPECs: data files, globs, split folders, save_to_disk folders, Hub ids offline."""

from __future__ import annotations

import pyarrow as pa
import pytest
from dataset_builders import write_jsonl, write_parquet

from hf_vocab_audit import AuditError
from hf_vocab_audit.dataset.spec import open_spec


def _rows(split, batch_size=2):
    return sum(b.num_rows for b in split.batches(batch_size))


def test_jsonl_file_is_one_train_split(tmp_path):
    path = write_jsonl(tmp_path / "a.jsonl", [{"text": "x", "label": 0}] * 5)
    (split,) = open_spec(str(path))
    assert split.name == "train" and _rows(split) == 5
    assert all(isinstance(b, pa.Table) and b.num_rows <= 2 for b in split.batches(2))


def test_folder_names_give_splits_and_glob_reads_many_files(tmp_path):
    write_jsonl(tmp_path / "d" / "train.jsonl", [{"text": "x"}] * 3)
    write_jsonl(tmp_path / "d" / "test.jsonl", [{"text": "y"}] * 2)
    splits = {s.name: s for s in open_spec(str(tmp_path / "d"))}
    assert {n: _rows(s) for n, s in splits.items()} == {"train": 3, "test": 2}
    write_parquet(tmp_path / "p" / "part-0.parquet", {"input_ids": [[1, 2]]})
    write_parquet(tmp_path / "p" / "part-1.parquet", {"input_ids": [[3], [4]]})
    (split,) = open_spec(str(tmp_path / "p" / "*.parquet"))
    assert _rows(split) == 3


def test_save_to_disk_dataset_and_dataset_dict(tmp_path):
    import datasets

    features = datasets.Features({"text": datasets.Value("string"),
                                  "label": datasets.ClassLabel(names=["neg", "pos"])})
    ds = datasets.Dataset.from_dict({"text": ["a", "b", "c"], "label": [0, 1, 1]}, features=features)
    ds.save_to_disk(str(tmp_path / "one"))
    datasets.DatasetDict({"train": ds, "test": ds.select([0])}).save_to_disk(str(tmp_path / "dict"))
    (one,) = open_spec(str(tmp_path / "one"))
    assert _rows(one) == 3 and one.features["label"].names == ["neg", "pos"]
    splits = {s.name: _rows(s) for s in open_spec(str(tmp_path / "dict"))}
    assert splits == {"train": 3, "test": 1}


@pytest.mark.parametrize(
    ("spec", "problem"),
    [("missing/data.jsonl", "does not exist"), ("./nothing", "does not exist")],
)
def test_missing_paths_are_audit_errors(spec, problem, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(AuditError, match=problem):
        open_spec(spec)


def test_unknown_extension_and_offline_hub_id(tmp_path):
    bad = tmp_path / "data.xyz"
    bad.write_text("x")
    with pytest.raises(AuditError, match="unknown data file type"):
        open_spec(str(bad))
    with pytest.raises(AuditError, match="nobody/no-such-dataset") as info:
        open_spec("nobody/no-such-dataset")
    assert "\n" not in str(info.value)
