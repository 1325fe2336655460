"""Scanning: roles, flags, row limits, parallel splits, and bad input as one-line errors."""

from __future__ import annotations

import pytest
from dataset_builders import write_jsonl, write_parquet

from hf_vocab_audit import AuditError, audit
from hf_vocab_audit.core.options import ScanOptions as Options
from hf_vocab_audit.dataset.engines.registry import scan
from hf_vocab_audit.facts import gather


def _split(report, name="train"):
    return next(s for s in report.to_dict()["dataset"]["splits"] if s["split"] == name)


def test_roles_detected_and_unknown_columns_listed_as_skipped(bert_cls, tmp_path):
    data = write_jsonl(tmp_path / "t.jsonl", [{"id": "a1", "sentence": "w1 w2", "label": 1, "score": 0.5}])
    report = audit(bert_cls, datasets=[data])
    split = _split(report)
    assert {c: v["role"] for c, v in split["columns"].items()} == {"sentence": "text", "label": "class_label"}
    assert {s["column"] for s in split["skipped_columns"]} == {"id", "score"}
    assert any("column 'id'" in s.what and "--text-column" in s.reason for s in report.skipped)


def test_flags_override_detection(bert_cls, tmp_path):
    data = write_jsonl(tmp_path / "t.jsonl", [{"body": "w1 w2 w3", "target": 5, "label": 9}])
    report = audit(bert_cls, datasets=[data], text_columns=["body"], label_columns=["target"])
    split = _split(report)
    assert split["columns"]["body"]["tokens"] == 5  # [CLS] w1 w2 w3 [SEP]
    assert {f.location.column for f in report.findings if f.code == "HVA510"} == {"target"}


def test_unknown_flag_column_and_split_are_audit_errors(bert_cls, tmp_path):
    data = write_jsonl(tmp_path / "t.jsonl", [{"text": "w1", "label": 0}])
    with pytest.raises(AuditError, match="--text-column 'body': no split has that column"):
        audit(bert_cls, datasets=[data], text_columns=["body"])
    with pytest.raises(AuditError, match="no split named 'validation'"):
        audit(bert_cls, datasets=[data], splits=["validation"])


def test_max_rows_stops_early_and_says_so(bert_cls, tmp_path):
    data = write_jsonl(tmp_path / "t.jsonl", [{"text": "w1", "label": 0}] * 9 + [{"text": "w1", "label": 7}])
    report = audit(bert_cls, datasets=[data], max_rows=5, batch_size=3)
    assert _split(report)["rows"] == 5 and _split(report)["truncated"] is True
    assert not [f for f in report.findings if f.code == "HVA510"]  # row 9 was not scanned
    full = audit(bert_cls, datasets=[data], batch_size=3)
    assert [f.location.row for f in full.findings if f.code == "HVA510"] == [9]


def test_parallel_splits_give_the_same_summary(bert_cls, tmp_path):
    write_parquet(tmp_path / "d" / "train.parquet", {"input_ids": [[2, 5, 200]] * 50, "label": [0, 1] * 25})
    write_parquet(tmp_path / "d" / "test.parquet", {"input_ids": [[2, 5, 3]] * 20 + [[2, -1]], "label": [2] * 21})
    facts = gather(bert_cls)
    one = scan(facts, Options((str(tmp_path / "d"),), batch_size=7))
    two = scan(facts, Options((str(tmp_path / "d"),), batch_size=7, num_proc=2))
    assert one.summary == two.summary
    assert one.summary.rows == {(str(tmp_path / "d"), "train"): 50, (str(tmp_path / "d"), "test"): 21}


def test_static_audit_is_unchanged_without_a_dataset(bert_cls):
    report = audit(bert_cls)
    assert report.dataset is None and not any(c.startswith("HVA5") for c in report.rules_run)


def test_over_long_text_rows_are_reported_not_tokenized(bert_cls, tmp_path, monkeypatch):
    """HVA532: a row over the cap is never handed to the tokenizers library (a 32 MB word aborts it)."""
    from hf_vocab_audit.dataset import kernel

    monkeypatch.setattr(kernel, "MAX_TEXT_CHARS", 20)  # the real cap is 1,000,000 characters
    data = write_jsonl(tmp_path / "t.jsonl", [{"text": "w1 w2", "label": 0}, {"text": "w1 " * 10, "label": 1},
                                              {"text": None, "label": 0}, {"text": "w" * 21, "label": 1}])
    report = audit(bert_cls, datasets=[data])
    hits = [f for f in report.findings if f.code == "HVA532"]
    assert len(hits) == 1 and hits[0].details["rows"] == 2
    assert [loc["row"] for loc in hits[0].details["locations"]] == [1, 3]
    assert [loc["value"] for loc in hits[0].details["locations"]] == [30, 21]  # characters
    assert _split(report)["columns"]["text"]["tokens"] == 4 + 2 + 2 + 2  # the long rows count as empty


def test_text_rows_under_the_cap_are_quiet(bert_cls, tmp_path):
    data = write_jsonl(tmp_path / "t.jsonl", [{"text": "w1 " * 1000, "label": 0}])
    assert not [f for f in audit(bert_cls, datasets=[data]).findings if f.code == "HVA532"]
