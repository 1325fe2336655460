"""Rows the trainer cannot use do not stop the scan: text missing from several rows (null once ``datasets``
reads the file) and lines that are not JSON are findings at their row or line, and the rest is scanned."""

from __future__ import annotations

import pytest
from dataset_builders import write_jsonl

from hf_vocab_audit import audit


def _found(report, code):
    return [f for f in report.findings if f.code == code]


def test_text_missing_or_null_in_several_rows(llama_lm, tmp_path):
    """Two or more null text rows used to crash the scan (None values sorted to count them)."""
    import datasets
    from transformers import AutoTokenizer

    rows = [{"text": "w1 w2"}, {"other": 1}, {"text": None}, {"text": "w3"}, {"other": 2}]
    data = write_jsonl(tmp_path / "t.jsonl", rows)
    loaded = datasets.load_dataset("json", data_files={"train": str(data)})["train"]
    assert loaded["text"] == ["w1 w2", None, None, "w3", None]  # what the trainer gets
    with pytest.raises((TypeError, ValueError)):  # and what its tokenizer does with them
        AutoTokenizer.from_pretrained(llama_lm)(loaded["text"])
    report = audit(llama_lm, datasets=[data])
    (hit,) = _found(report, "HVA531")
    assert "3 value(s) in 3 row(s) are null" in hit.message and hit.location.row == 1
    assert [loc["row"] for loc in hit.details["locations"]] == [1, 2, 4]
    assert report.to_dict()["dataset"]["splits"][0]["columns"]["text"]["rows"] == 5
    healthy = write_jsonl(tmp_path / "h.jsonl", [r for r in rows if r.get("text")])
    assert _found(audit(llama_lm, datasets=[healthy]), "HVA531") == []
