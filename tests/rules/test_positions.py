"""HVA3xx: model_max_length against learned positions, token_type_ids against type_vocab_size."""

from __future__ import annotations

from builders import checkpoint, edit_json, make_model, make_tokenizer

from hf_vocab_audit import audit
from hf_vocab_audit.core.fixes import SetJsonKey


def codes(report, code):
    return [f for f in report.findings if f.code == code]


def test_hva301_bert_model_max_length_above_positions(tmp_path):
    checkpoint(tmp_path, "bert", 104, model_max_length=128)
    (f,) = codes(audit(tmp_path), "HVA301")
    assert f.message == (
        "tokenizer model_max_length 128 > the 64 positions the model can use "
        "(bert.embeddings.position_embeddings.weight has 64 rows)"
    )
    assert f.fix.edits == (SetJsonKey("tokenizer_config.json", "model_max_length", 64),)


def test_hva301_roberta_reserves_padding_idx_plus_one(tmp_path):
    # 66 rows, padding_idx 1: positions 2..65 -> 64 usable; 66 is the classic off-by-two.
    checkpoint(tmp_path / "bad", "roberta", 104, model_max_length=66)
    (f,) = codes(audit(tmp_path / "bad"), "HVA301")
    assert "> the 64 positions" in f.message and "minus padding_idx 1 + 1 reserved" in f.message
    checkpoint(tmp_path / "good", "roberta", 104, model_max_length=64)
    assert not codes(audit(tmp_path / "good"), "HVA301")


def test_hva301_quiet_within_limit_and_for_rotary(tmp_path):
    checkpoint(tmp_path / "bert", "bert", 104, model_max_length=64)
    assert not codes(audit(tmp_path / "bert"), "HVA301")
    checkpoint(tmp_path / "llama", "llama", 104, model_max_length=100000)  # rotary: no position table
    report = audit(tmp_path / "llama")
    assert not codes(report, "HVA301") and not codes(report, "HVA303")


def test_hva303_absolute_model_without_model_max_length(tmp_path):
    checkpoint(tmp_path, "bert", 104)
    (f,) = codes(audit(tmp_path), "HVA303")
    assert f.message.startswith("the tokenizer sets no model_max_length; the model can use 64 positions")


def test_hva302_bert_tokenizer_on_roberta_model(tmp_path):
    make_model(tmp_path, "roberta", 104, pad_token_id=0, bos_token_id=2, eos_token_id=3)
    make_tokenizer(tmp_path, 104, style="bert", model_max_length=64)
    (f,) = codes(audit(tmp_path), "HVA302")
    assert f.message == (
        "the tokenizer gives sentence pairs token_type_ids up to 1, "
        "but roberta.embeddings.token_type_embeddings.weight has 1 row(s)"
    )


def test_hva302_quiet_for_matching_tokenizers(tmp_path):
    checkpoint(tmp_path / "roberta", "roberta", 104, model_max_length=64)  # returns no token_type_ids
    assert not codes(audit(tmp_path / "roberta"), "HVA302")
    checkpoint(tmp_path / "bert", "bert", 104, model_max_length=64)  # type_vocab_size 2
    assert not codes(audit(tmp_path / "bert"), "HVA302")


def test_hva302_respects_model_input_names_override(tmp_path):
    make_model(tmp_path, "roberta", 104, pad_token_id=0, bos_token_id=2, eos_token_id=3)
    make_tokenizer(tmp_path, 104, style="bert", model_max_length=64)
    edit_json(tmp_path / "tokenizer_config.json", model_input_names=["input_ids", "attention_mask"])
    assert not codes(audit(tmp_path), "HVA302")
