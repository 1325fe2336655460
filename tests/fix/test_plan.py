"""Which fixes the plan applies, which it leaves unfixed (and why), and that it never shrinks."""

from __future__ import annotations

import json

from builders import edit_json, make_model, make_tokenizer
from transformers import AutoTokenizer

from hf_vocab_audit import audit
from hf_vocab_audit.fix import fix_checkpoint

from .fixkit import broken, state, tree_hashes

RESERVED = ["<|reserved_special_token_0|>", "<|finetune_right_pad_id|>", "<|reserved_special_token_1|>"]


def test_padded_checkpoint_is_never_shrunk_or_touched(tmp_path, guard_input):
    src = tmp_path / "m"
    make_model(src, "llama", 128, tie_word_embeddings=False)
    make_tokenizer(src, 100)
    guard_input(src)
    report = fix_checkpoint(src, output=tmp_path / "out")
    assert report.fixes == ()
    assert tree_hashes(tmp_path / "out") == tree_hashes(src)  # a byte-for-byte copy
    assert [f.code for f in report.findings] == ["HVA105"]  # padding stays: it is not a bug
    assert report.to_dict()["fix"]["rows_after"] == 128
    assert "128 embedding rows already cover every token id (up to 99, 28 padding rows spare)" in \
        report.to_dict()["fix"]["notes"][0]


def test_tokens_added_inside_padded_rows_need_no_resize(tmp_path, guard_input):
    src = tmp_path / "m"
    make_model(src, "llama", 128, tie_word_embeddings=False)
    make_tokenizer(src, 100, added_special=["<|im_start|>", "<|im_end|>"])
    guard_input(src)
    report = fix_checkpoint(src, output=tmp_path / "out")
    assert report.to_dict()["fix"]["verification"]["grown"] == []
    assert "no resize needed" in report.to_dict()["fix"]["notes"][0]
    assert state(tmp_path / "out")["model.embed_tokens.weight"].shape == (128, 16)


def test_pad_to_multiple_of_rounds_the_grown_rows(tmp_path, guard_input):
    src = guard_input(broken(tmp_path / "m", tie_word_embeddings=False))
    report = fix_checkpoint(src, output=tmp_path / "out", pad_to_multiple_of=64)
    fixed = state(tmp_path / "out")
    assert fixed["model.embed_tokens.weight"].shape == (128, 16) == fixed["lm_head.weight"].shape
    assert json.loads((tmp_path / "out" / "config.json").read_text())["vocab_size"] == 128
    assert [f.code for f in report.findings] == ["HVA105"]  # 22 padding rows now, reported as info


def test_config_vocab_size_is_set_to_the_rows(tmp_path, guard_input):
    src = tmp_path / "m"
    make_model(src, "llama", 104)
    make_tokenizer(src, 104)
    edit_json(src / "config.json", vocab_size=100)
    guard_input(src)
    assert [f.code for f in audit(src).findings] == ["HVA103"]
    report = fix_checkpoint(src, output=tmp_path / "out")
    assert [(f.code, f.description) for f in report.fixes] == [("HVA103", "set vocab_size to 104")]
    assert report.findings == ()
    assert (tmp_path / "out" / "model.safetensors").read_bytes() == (src / "model.safetensors").read_bytes()


def test_model_max_length_is_capped_to_the_positions(tmp_path, guard_input):
    src = tmp_path / "m"
    make_model(src, "bert", 100)
    make_tokenizer(src, 100, style="bert", model_max_length=512)
    guard_input(src)
    report = fix_checkpoint(src, output=tmp_path / "out")
    assert [f.code for f in report.fixes] == ["HVA301"]
    assert json.loads((tmp_path / "out" / "tokenizer_config.json").read_text())["model_max_length"] == 64
    assert AutoTokenizer.from_pretrained(tmp_path / "out").model_max_length == 64


def test_unsafe_fixes_are_listed_but_not_applied_without_the_flag(tmp_path, guard_input):
    src = tmp_path / "m"
    make_model(src, "llama", 104, pad_token_id=None)
    make_tokenizer(src, 104, pad=None)
    guard_input(src)
    report = fix_checkpoint(src, output=tmp_path / "out")
    unfixed = report.to_dict()["fix"]["unfixed"]
    assert [u["code"] for u in unfixed] == ["HVA203"]
    assert "--unsafe-fixes" in unfixed[0]["reason"]
    assert [f.code for f in report.findings] == ["HVA203"]


def test_missing_pad_uses_a_reserved_special_token(tmp_path, guard_input):
    src = tmp_path / "m"
    make_model(src, "llama", 104, pad_token_id=None)
    make_tokenizer(src, 101, pad=None, added_special=RESERVED)
    guard_input(src)
    report = fix_checkpoint(src, output=tmp_path / "out", unsafe_fixes=True)
    assert [f.code for f in report.fixes] == ["HVA203"]
    assert "'<|finetune_right_pad_id|>' (id 102)" in report.fixes[0].description
    assert report.findings == ()
    tok = AutoTokenizer.from_pretrained(tmp_path / "out")
    assert (tok.pad_token, tok.pad_token_id) == ("<|finetune_right_pad_id|>", 102)
    assert json.loads((tmp_path / "out" / "config.json").read_text())["pad_token_id"] == 102
    assert state(tmp_path / "out")["model.embed_tokens.weight"].shape == (104, 16)  # nothing grew


def test_missing_pad_without_reserved_token_adds_one_and_grows(tmp_path, guard_input):
    src = tmp_path / "m"
    make_model(src, "llama", 104, pad_token_id=None, tie_word_embeddings=False)
    make_tokenizer(src, 104, pad=None)
    guard_input(src)
    report = fix_checkpoint(src, output=tmp_path / "out", unsafe_fixes=True, verify_load="always")
    assert "a new special token '<pad>' (id 104)" in report.fixes[0].description
    tok = AutoTokenizer.from_pretrained(tmp_path / "out")
    assert (len(tok), tok.pad_token, tok.pad_token_id) == (105, "<pad>", 104)
    fixed = state(tmp_path / "out")
    assert fixed["model.embed_tokens.weight"].shape == (105, 16) == fixed["lm_head.weight"].shape
    assert json.loads((tmp_path / "out" / "config.json").read_text())["pad_token_id"] == 104
    assert report.findings == ()


def test_special_ids_sync_to_the_tokenizer_only_when_unsafe(tmp_path, guard_input):
    src = tmp_path / "m"
    make_model(src, "llama", 104)
    make_tokenizer(src, 104)
    edit_json(src / "config.json", eos_token_id=200)
    guard_input(src)
    codes = sorted(f.code for f in audit(src).findings)
    assert codes == ["HVA201", "HVA202"]
    safe = fix_checkpoint(src, output=tmp_path / "safe")
    assert safe.fixes == () and sorted(u["code"] for u in safe.to_dict()["fix"]["unfixed"]) == codes
    report = fix_checkpoint(src, output=tmp_path / "out", unsafe_fixes=True)
    assert sorted(f.code for f in report.fixes) == codes
    assert json.loads((tmp_path / "out" / "config.json").read_text())["eos_token_id"] == 2
    assert report.findings == ()
