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


def _datasets_rows(path):
    """What ``datasets``' own streaming JSON builder yields for ``path`` (the reference reader)."""
    import datasets

    ds = datasets.load_dataset("json", data_files={"train": str(path)}, streaming=True)["train"]
    return pa.concat_tables(ds.with_format("arrow").iter(batch_size=1000))


ROWS = [{"text": f"row {i} é", "label": i % 3, "score": i / 7, "ok": i % 2 == 0, "input_ids": [i, i + 1]}
        for i in range(40)]


def test_jsonl_rows_and_types_are_the_json_builders(tmp_path):
    path = write_jsonl(tmp_path / "a.jsonl", ROWS)
    (split,) = open_spec(str(path))
    ours = pa.concat_tables(split.batches(7))
    assert ours.equals(_datasets_rows(path))


@pytest.mark.parametrize("late_row", [
    {"text": "new column", "label": 1, "score": 0.5, "ok": True, "input_ids": [1], "extra": "x"},
    {"text": "nested", "label": 1, "score": 0.5, "ok": True, "input_ids": [1], "meta": {"a": 1}},
    {"text": "float label", "label": 1.5, "score": 0.5, "ok": True, "input_ids": [1]},
])
def test_jsonl_that_changes_midway_is_read_by_datasets_from_that_row(tmp_path, monkeypatch, late_row):
    """A block the fast reader cannot take as the first one's schema hands over to ``datasets`` without
    losing or repeating a row."""
    monkeypatch.setattr("hf_vocab_audit.io.jsonlines.BLOCK_BYTES", 256)  # several blocks in a small file
    path = write_jsonl(tmp_path / "a.jsonl", ROWS + [late_row] + ROWS)
    (split,) = open_spec(str(path))
    try:
        reference = _datasets_rows(path)
    except Exception:  # noqa: BLE001 - datasets refuses the file: so must the scan
        with pytest.raises(Exception):  # noqa: B017, PT011
            list(split.batches(7))
        return
    ours = pa.concat_tables(split.batches(7), promote_options="permissive")
    assert ours.num_rows == reference.num_rows == 2 * len(ROWS) + 1
    assert ours.column("text").to_pylist() == reference.column("text").to_pylist()


def test_jsonl_with_nested_objects_is_read_by_datasets(tmp_path):
    path = write_jsonl(tmp_path / "a.jsonl", [{"text": "x", "meta": {"a": i}} for i in range(5)])
    (split,) = open_spec(str(path))
    assert pa.concat_tables(split.batches(2)).equals(_datasets_rows(path))
