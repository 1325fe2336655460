"""HVA5xx: each rule fires on a dataset built here (numbers and locations asserted) and stays quiet on a
healthy one."""

from __future__ import annotations

from pathlib import Path

from dataset_builders import write_jsonl, write_parquet
from memory_cases import comparable, loaded

from hf_vocab_audit import audit


def dataset_findings(model: Path, *specs: Path, **kwargs):
    report = audit(model, datasets=[str(s) for s in specs], select=["HVA5"], **kwargs)
    # The same data against the live objects from_pretrained makes of the folder: the same findings.
    live_model, live_tok = loaded(model, kwargs.pop("tokenizer", None))
    memory = audit(model=live_model, tokenizer=live_tok, datasets=[str(s) for s in specs], select=["HVA5"], **kwargs)
    assert comparable(memory)["findings"] == comparable(report)["findings"]
    return report, {f.code: f for f in report.findings}


def of(report, code):
    return [f for f in report.findings if f.code == code]


def test_healthy_classification_data_is_clean(bert_cls, tmp_path):
    rows = [{"text": f"w{i} w{i + 1}", "label": i % 3} for i in range(30)]
    write_jsonl(tmp_path / "d" / "train.jsonl", rows)
    write_jsonl(tmp_path / "d" / "test.jsonl", rows[:9])
    report, found = dataset_findings(bert_cls, tmp_path / "d")
    assert found == {}
    assert "HVA510" in report.rules_run and "HVA501" in report.rules_run


def test_healthy_padded_model_is_clean(tmp_path):
    """More embedding rows than tokens is not a bug: ids up to the tokenizer's max are fine."""
    from builders import checkpoint

    model = checkpoint(tmp_path / "m", "llama", rows=128, tokenizer_vocab=100)
    data = write_parquet(tmp_path / "ids.parquet", {"input_ids": [[1, 5, 99], [1, 2]],
                                                    "labels": [[-100, 5, 99], [-100, 2]]})
    _, found = dataset_findings(model, data)
    assert found == {}


def test_hva501_id_beyond_embedding_in_id_column(bert_cls, tmp_path):
    data = write_parquet(tmp_path / "ids.parquet", {"input_ids": [[2, 7, 3], [2, 104, 105, 3], [2, 3]]})
    report, found = dataset_findings(bert_cls, data)
    f = found["HVA501"]
    assert "2 value(s) in 1 row(s)" in f.message and ">= the 104 rows" in f.message
    assert (f.location.split, f.location.column, f.location.row, f.location.position) == ("train", "input_ids", 1, 1)
    assert f.details["locations"][:2] == [{"row": 1, "position": 1, "value": 104},
                                          {"row": 1, "position": 2, "value": 105}]
    assert report.to_dict()["dataset"]["splits"][0]["columns"]["input_ids"]["max"] == 105


def test_hva501_fires_on_tokenized_text_with_added_tokens(tmp_path):
    """Tokens added to the tokenizer but not to the model: the text that uses them is located."""
    from builders import checkpoint

    model = checkpoint(tmp_path / "m", "bert-cls", rows=104, added=["<new>"], model={"num_labels": 3})
    data = write_jsonl(tmp_path / "t.jsonl", [{"text": "w1 w2", "label": 0}, {"text": "w1 <new> w2", "label": 1}])
    _, found = dataset_findings(model, data)
    f = found["HVA501"]
    assert "tokenized to ids >= the 104 rows" in f.message
    assert (f.location.row, f.location.position) == (1, 2)  # [CLS] w1 <new>
    assert f.details["top_values"] == [{"value": 104, "count": 1}]


def test_hva502_minus_100_in_input_ids_fires_but_not_in_labels(llama_lm, tmp_path):
    data = write_parquet(tmp_path / "lm.parquet", {
        "input_ids": [[1, 5, 6], [1, 7, -100, -100]],
        "labels": [[-100, 5, 6], [-100, 7, -100, -100]],
    })
    _, found = dataset_findings(llama_lm, data)
    assert set(found) == {"HVA502"}
    f = found["HVA502"]
    assert f.location.column == "input_ids" and "2 value(s) in 1 row(s)" in f.message
    assert (f.location.row, f.location.position) == (1, 2)
    assert f.details["top_values"] == [{"value": -100, "count": 2}]


def test_hva503_token_type_beyond_type_vocab(tmp_path):
    from builders import checkpoint

    model = checkpoint(tmp_path / "m", "roberta-cls", rows=104, model={"num_labels": 2})
    data = write_parquet(tmp_path / "p.parquet", {"input_ids": [[0, 5, 2], [0, 5, 2, 6, 2]],
                                                  "token_type_ids": [[0, 0, 0], [0, 0, 0, 1, 1]],
                                                  "label": [0, 1]})
    _, found = dataset_findings(model, data)
    f = found["HVA503"]
    assert ">= type_vocab_size 1" in f.message and "2 value(s) in 1 row(s)" in f.message
    assert (f.location.row, f.location.position) == (1, 3)


def test_hva504_sequence_longer_than_absolute_positions(bert_cls, tmp_path):
    long = " ".join(["w1"] * 70)  # 70 words + [CLS] + [SEP] = 72 > 64 positions
    data = write_jsonl(tmp_path / "t.jsonl", [{"text": "w1", "label": 0}] * 3 + [{"text": long, "label": 1}])
    _, found = dataset_findings(bert_cls, data)
    f = found["HVA504"]
    assert "longer than the 64 usable positions" in f.message
    assert f.details["locations"] == [{"row": 3, "position": 64, "value": 72}]


def test_hva505_rotary_model_long_sequence_is_info(llama_lm, tmp_path):
    data = write_parquet(tmp_path / "p.parquet", {"input_ids": [[5] * 10, [5] * 130]})
    _, found = dataset_findings(llama_lm, data)
    assert set(found) == {"HVA505"}
    assert found["HVA505"].severity.value == "info"
    assert found["HVA505"].details["locations"] == [{"row": 1, "position": 128, "value": 130}]


def test_hva510_label_beyond_num_labels(bert_cls, tmp_path):
    data = write_jsonl(tmp_path / "t.jsonl", [{"text": "w1", "label": v} for v in (0, 1, 2, 7, 0, 7, -100)])
    _, found = dataset_findings(bert_cls, data)
    f = found["HVA510"]
    assert "2 value(s) in 2 row(s) outside 0..2" in f.message
    assert [loc["row"] for loc in f.details["locations"]] == [3, 5]
    assert "HVA511" not in found and "HVA512" not in found


def test_hva511_one_based_labels_with_shift_hint(bert_cls, tmp_path):
    data = write_jsonl(tmp_path / "t.jsonl", [{"text": "w1", "label": v} for v in (1, 2, 3, 1, 3)])
    _, found = dataset_findings(bert_cls, data)
    assert "HVA510" not in found
    f = found["HVA511"]
    assert "labels run 1..3, not 0..2" in f.message and "2 value(s) in 2 row(s)" in f.message
    assert [loc["row"] for loc in f.details["locations"]] == [2, 4]
    assert '- 1' in f.hint


def test_hva512_minus_one_as_unknown(bert_cls, tmp_path):
    data = write_jsonl(tmp_path / "t.jsonl", [{"text": "w1", "label": v} for v in (0, -1, 2, 1, -1)])
    _, found = dataset_findings(bert_cls, data)
    f = found["HVA512"]
    assert "2 value(s) in 2 row(s) are -1" in f.message
    assert [loc["row"] for loc in f.details["locations"]] == [1, 4]
    assert "HVA510" not in found


def test_hva513_holes_and_hva516_count_mismatch(tmp_path):
    from builders import checkpoint

    model = checkpoint(tmp_path / "m", "bert-cls", rows=104, model={"num_labels": 5})
    data = write_jsonl(tmp_path / "t.jsonl", [{"text": "w1", "label": v} for v in (0, 1, 4, 4)])
    _, found = dataset_findings(model, data)
    assert "classes 2, 3 never occur" in found["HVA513"].message
    assert "3 distinct classes in the data" in found["HVA516"].message and "num_labels is 5" in found["HVA516"].message


def test_hva514_label_only_in_test(bert_cls, tmp_path):
    write_jsonl(tmp_path / "d" / "train.jsonl", [{"text": "w1", "label": v} for v in (0, 1, 0, 1)])
    write_jsonl(tmp_path / "d" / "test.jsonl", [{"text": "w1", "label": v} for v in (0, 1, 2, 2)])
    _, found = dataset_findings(bert_cls, tmp_path / "d")
    f = found["HVA514"]
    assert f.location.split == "test" and f.location.row == 2
    assert "1 label(s) in 2 row(s) never occur in split 'train': 2 (x2, first at row 2)" in f.message


def test_hva515_string_labels_missing_from_label2id(tmp_path):
    from builders import checkpoint, edit_json

    model = checkpoint(tmp_path / "m", "bert-cls", rows=104, model={"num_labels": 2})
    edit_json(model / "config.json", id2label={"0": "neg", "1": "pos"}, label2id={"neg": 0, "pos": 1})
    data = write_jsonl(tmp_path / "t.jsonl", [{"text": "w1", "label": v} for v in ("neg", "pos", "Pos", "pos")])
    _, found = dataset_findings(model, data)
    f = found["HVA515"]
    assert "1 string label(s) in 1 row(s) missing from config.label2id" in f.message and "'Pos'" in f.message
    assert f.location.row == 2


def test_token_classification_labels_checked_per_token(tmp_path):
    import transformers
    from builders import build_config, make_tokenizer

    cfg = build_config("bert", 104, num_labels=3)
    model = transformers.BertForTokenClassification(cfg)
    model.save_pretrained(tmp_path / "m")
    make_tokenizer(tmp_path / "m", 104, style="bert")
    data = write_parquet(tmp_path / "ner.parquet", {"input_ids": [[2, 5, 6, 3], [2, 7, 3]],
                                                    "labels": [[-100, 0, 1, -100], [-100, 3, 2]]})
    _, found = dataset_findings(tmp_path / "m", data)
    assert "HVA510" in found and "HVA520" not in found  # class labels, not token ids
    assert found["HVA510"].details["locations"] == [{"row": 1, "position": 1, "value": 3}]


def test_hva520_lm_labels_beyond_lm_head_and_hva521_all_masked(llama_lm, tmp_path):
    data = write_parquet(tmp_path / "lm.parquet", {
        "input_ids": [[1, 5, 6], [1, 7, 8], [1, 9]],
        "labels": [[-100, 5, 200], [-100, -100, -100], [-100, 9]],
    })
    _, found = dataset_findings(llama_lm, data)
    f = found["HVA520"]
    assert ">= the 104 output-embedding rows" in f.message and (f.location.row, f.location.position) == (0, 2)
    g = found["HVA521"]
    assert "1 value(s) in 1 row(s) with every label -100" in g.message and g.location.row == 1


def test_hva522_eos_labels_masked_when_pad_is_eos(llama_pad_eos, llama_lm, tmp_path):
    data = write_parquet(tmp_path / "lm.parquet", {
        "input_ids": [[1, 5, 2], [1, 7, 2]],
        "labels": [[-100, 5, 2], [-100, 7, -100]],
    })
    _, found = dataset_findings(llama_pad_eos, data)
    f = found["HVA522"]
    assert "are eos (id 2) labelled -100" in f.message and (f.location.row, f.location.position) == (1, 2)
    _, quiet = dataset_findings(llama_lm, data)  # pad != eos: the masked eos is deliberate
    assert "HVA522" not in quiet


def test_hva530_mixed_label_types_and_nested_ids(bert_cls, tmp_path):
    data = write_jsonl(tmp_path / "mixed.jsonl", [{"text": "w1", "label": 1}, {"text": "w2", "label": "pos"}])
    _, found = dataset_findings(bert_cls, data)
    assert "mixed value types" in found["HVA530"].message and found["HVA530"].location.column == "label"
    nested = write_parquet(tmp_path / "n.parquet", {"input_ids": [[[2, 5]], [[2, 6]]]})
    _, found = dataset_findings(bert_cls, nested)
    assert "nested lists" in found["HVA530"].message


def test_hva531_null_labels(bert_cls, tmp_path):
    data = write_jsonl(tmp_path / "t.jsonl", [{"text": "w1", "label": 0}, {"text": "w2", "label": None},
                                              {"text": "w1", "label": 2}])
    _, found = dataset_findings(bert_cls, data)
    assert "1 value(s) in 1 row(s) are null" in found["HVA531"].message and found["HVA531"].location.row == 1
