"""HVA1xx and HVA208: tokenizer ids against embedding rows and config.vocab_size."""

from __future__ import annotations

from builders import CHATML, checkpoint, edit_json, make_model, make_tokenizer

from hf_vocab_audit import audit


def codes(report, code):
    return [f for f in report.findings if f.code == code]


def test_healthy_untied_llama_is_clean(tmp_path):
    report = audit(checkpoint(tmp_path, "llama", 104))
    assert report.findings == ()
    assert report.exit_code() == 0


def test_added_tokens_without_resize_fire_hva101_and_hva102(tmp_path):
    checkpoint(tmp_path, "llama", 104, added_special=["<|im_start|>", "<|im_end|>"], chat_template=CHATML)
    report = audit(tmp_path)
    (f101,) = codes(report, "HVA101")
    assert "2 id(s) >= the 104 rows of model.embed_tokens.weight" in f101.message
    assert "'<|im_start|>' (104)" in f101.message and "'<|im_end|>' (105)" in f101.message
    assert f101.location.tensor == "model.embed_tokens.weight"
    assert f101.location.file == "model.safetensors"
    assert f101.fix is not None and f101.fix.edits[0].rows == 106
    (f102,) = codes(report, "HVA102")
    assert "2 id(s) >= the 104 rows of lm_head.weight" in f102.message
    assert report.exit_code() == 1


def test_hva101_names_first_tokens_and_counts_the_rest(tmp_path):
    checkpoint(tmp_path, "gpt2", 100, tokenizer_vocab=100, added=[f"tok{i}" for i in range(8)])
    (f,) = codes(audit(tmp_path), "HVA101")
    assert "8 id(s)" in f.message and "and 3 more" in f.message
    assert f.details["count"] == 8 and f.details["max_id"] == 107


def test_tied_model_reports_only_hva101(tmp_path):
    checkpoint(tmp_path, "gpt2", 100, added=["extra"])
    report = audit(tmp_path)
    assert len(codes(report, "HVA101")) == 1 and not codes(report, "HVA102")
    assert any("tied" in s.reason for s in report.skipped if s.what.startswith("HVA102"))


def test_hva103_config_vocab_size_disagrees(tmp_path):
    checkpoint(tmp_path, "llama", 104)
    edit_json(tmp_path / "config.json", vocab_size=128)
    (f,) = codes(audit(tmp_path), "HVA103")
    assert f.message == "config.json vocab_size is 128 but model.embed_tokens.weight has 104 rows"
    assert f.location.key == "vocab_size"


def test_hva103_reads_nested_text_config(tmp_path):
    checkpoint(tmp_path, "llama", 104)
    cfg = (tmp_path / "config.json").read_text()
    import json

    data = json.loads(cfg)
    text = {k: data.pop(k) for k in list(data) if k not in ("architectures", "model_type")}
    text["vocab_size"] = 99
    data["text_config"] = text
    (tmp_path / "config.json").write_text(json.dumps(data))
    (f,) = codes(audit(tmp_path), "HVA103")
    assert "text_config.vocab_size is 99" in f.message


def test_hva104_untied_lm_head_rows_differ(tmp_path):
    import torch
    from safetensors.torch import load_file, save_file

    checkpoint(tmp_path, "llama", 104)
    tensors = load_file(tmp_path / "model.safetensors")
    tensors["lm_head.weight"] = torch.cat([tensors["lm_head.weight"], torch.zeros(4, 16)])
    save_file(tensors, tmp_path / "model.safetensors", metadata={"format": "pt"})
    report = audit(tmp_path)
    (f,) = codes(report, "HVA104")
    assert f.message == "lm_head.weight has 108 rows but model.embed_tokens.weight has 104"
    assert f.location.tensor == "model.embed_tokens.weight"  # the smaller side is the one to grow
    assert not codes(report, "HVA102")


def test_padded_rows_are_info_never_error(tmp_path):
    # Qwen/T5 style: 128 rows, tokenizer emits 104 ids.
    make_model(tmp_path, "qwen2", 128)
    make_tokenizer(tmp_path, 104)
    report = audit(tmp_path)
    assert [f.code for f in report.findings] == ["HVA105"]
    (f,) = report.findings
    assert f.severity.value == "info"
    assert "24 of the 128 rows" in f.message and "ids 104..127" in f.message and "multiple of 128" in f.message
    assert report.exit_code("warning") == 0 and report.exit_code("info") == 1


def test_added_tokens_inside_the_padded_region_are_fine(tmp_path):
    make_model(tmp_path, "qwen2", 128)
    make_tokenizer(tmp_path, 104, added_special=["<|im_start|>", "<|im_end|>"], chat_template=CHATML)
    report = audit(tmp_path)
    assert not codes(report, "HVA101") and not codes(report, "HVA205") and not codes(report, "HVA206")
    assert "22 of the 128 rows" in codes(report, "HVA105")[0].message


def test_hva208_holes_in_the_id_range(tmp_path):
    # A vocabulary edited by hand: one entry moved to id 110, leaving 104..109 (and its old id) empty.
    checkpoint(tmp_path, "llama", 120, tokenizer_vocab=104)
    tj = tmp_path / "tokenizer.json"
    import json

    data = json.loads(tj.read_text())
    data["model"]["vocab"]["w99"] = 110
    tj.write_text(json.dumps(data))
    report = audit(tmp_path)
    (f,) = codes(report, "HVA208")
    assert "7 id(s) below the largest id 110 belong to no token (103..109)" in f.message
    assert "len(tokenizer) is 104 but ids reach 110" in f.message


def test_no_gap_on_contiguous_ids(tmp_path):
    assert not codes(audit(checkpoint(tmp_path, "llama", 104, added=["x1", "x2"], model={})), "HVA208")
