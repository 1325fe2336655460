"""HVA401: num_labels, id2label, label2id and the classifier rows."""

from __future__ import annotations

from builders import checkpoint, edit_json

from hf_vocab_audit import audit


def codes(report, code):
    return [f for f in report.findings if f.code == code]


LABELS = {"id2label": {"0": "neg", "1": "neu", "2": "pos"}, "label2id": {"neg": 0, "neu": 1, "pos": 2}}


def test_hva401_quiet_on_consistent_head(tmp_path):
    checkpoint(tmp_path, "bert-cls", 104, model_max_length=64, model={"num_labels": 3})
    edit_json(tmp_path / "config.json", **LABELS)
    assert not codes(audit(tmp_path), "HVA401")


def test_hva401_classifier_rows_differ_from_labels(tmp_path):
    checkpoint(tmp_path, "bert-cls", 104, model_max_length=64, model={"num_labels": 3})
    edit_json(tmp_path / "config.json", id2label={str(i): f"L{i}" for i in range(5)},
              label2id={f"L{i}": i for i in range(5)})
    (f,) = codes(audit(tmp_path), "HVA401")
    assert f.message == "classifier.weight has 3 rows but config.json declares 5 labels"
    assert f.location.tensor == "classifier.weight"


def test_hva401_label2id_not_inverse_and_holes(tmp_path):
    checkpoint(tmp_path, "roberta-cls", 104, model_max_length=64, model={"num_labels": 3})
    edit_json(tmp_path / "config.json", id2label={"0": "neg", "1": "neu", "3": "pos"},
              label2id={"neg": 0, "neu": 2, "pos": 3})
    messages = [f.message for f in codes(audit(tmp_path), "HVA401")]
    assert "config.json id2label ids are [0, 1, 3], not 0..2" in messages
    assert any(m.startswith("config.json label2id is not the inverse of id2label") for m in messages)


def test_hva401_score_head_of_causal_classifier(tmp_path):
    checkpoint(tmp_path, "llama-cls", 104, model={"num_labels": 4})
    edit_json(tmp_path / "config.json", id2label={"0": "a", "1": "b"}, label2id={"a": 0, "b": 1})
    (f,) = codes(audit(tmp_path), "HVA401")
    assert f.message == "score.weight has 4 rows but config.json declares 2 labels"
