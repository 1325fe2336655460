"""HVA2xx: special-token ids, pad/eos, chat template markers, added-token conflicts."""

from __future__ import annotations

import json

from builders import CHATML, DELETE, checkpoint, edit_json, make_model, make_tokenizer

from hf_vocab_audit import audit


def codes(report, code):
    return [f for f in report.findings if f.code == code]


def test_hva201_config_and_generation_ids_out_of_range(tmp_path):
    checkpoint(tmp_path, "llama", 104)
    edit_json(tmp_path / "config.json", eos_token_id=[2, 200])
    edit_json(tmp_path / "generation_config.json", pad_token_id=-5)
    found = codes(audit(tmp_path), "HVA201")
    messages = sorted(f.message for f in found)
    assert messages == [
        "config.json eos_token_id = [2, 200] is outside the 104 embedding rows (bad: [200])",
        "generation_config.json pad_token_id = -5 is outside the 104 embedding rows (bad: [-5])",
    ]
    gen = next(f for f in found if f.location.file == "generation_config.json")
    assert gen.fix is not None and gen.fix.applicability.value == "unsafe" and gen.fix.edits[0].value == 3


def test_hva201_quiet_on_healthy(tmp_path):
    assert not codes(audit(checkpoint(tmp_path, "llama", 104)), "HVA201")


def test_hva202_names_every_value(tmp_path):
    checkpoint(tmp_path, "llama", 104)
    edit_json(tmp_path / "generation_config.json", eos_token_id=[5, 6])
    (f,) = codes(audit(tmp_path), "HVA202")
    assert f.message == (
        "eos ids disagree: tokenizer_config.json eos_token '</s>' = 2; config.json eos_token_id = 2; "
        "generation_config.json eos_token_id = [5, 6]"
    )


def test_hva202_list_containing_the_tokenizer_id_agrees(tmp_path):
    # Llama-3.1-Instruct style: generation_config lists several eos ids including the tokenizer's.
    checkpoint(tmp_path, "llama", 104)
    edit_json(tmp_path / "generation_config.json", eos_token_id=[2, 7])
    edit_json(tmp_path / "config.json", eos_token_id=[2, 7])
    assert not codes(audit(tmp_path), "HVA202")


def test_hva203_missing_pad(tmp_path):
    make_model(tmp_path, "llama", 103, pad_token_id=None)
    make_tokenizer(tmp_path, 103, pad=None)
    report = audit(tmp_path)
    (f,) = codes(report, "HVA203")
    assert "no pad_token" in f.message and f.severity.value == "warning"
    assert report.exit_code() == 0 and report.exit_code("warning") == 1


def test_hva203_advice_names_only_a_token_this_tokenizer_has(tmp_path):
    """A Llama-3.0 style vocabulary has reserved specials but no <|finetune_right_pad_id|> (a 3.1 name)."""
    make_model(tmp_path / "reserved", "llama", 104, pad_token_id=None)
    make_tokenizer(tmp_path / "reserved", 103, pad=None, added_special=["<|reserved_special_token_0|>"])
    (f,) = codes(audit(tmp_path / "reserved"), "HVA203")
    assert "'<|reserved_special_token_0|>' (id 103)" in f.hint and "finetune_right_pad_id" not in f.hint
    make_model(tmp_path / "none", "llama", 103, pad_token_id=None)
    make_tokenizer(tmp_path / "none", 103, pad=None)
    (f,) = codes(audit(tmp_path / "none"), "HVA203")
    assert "no unused special token" in f.hint and "add a `<pad>`" in f.hint


def test_hva203_advice_is_what_the_fix_sets(tmp_path):
    from hf_vocab_audit.gate import run_gate

    make_model(tmp_path / "m", "llama", 104, pad_token_id=None)
    make_tokenizer(tmp_path / "m", 103, pad=None, added_special=["<|reserved_special_token_0|>"])
    (f,) = codes(audit(tmp_path / "m"), "HVA203")
    run_gate(str(tmp_path / "m"), fix=True, unsafe_fixes=True, output=tmp_path / "fixed")
    config = json.loads((tmp_path / "fixed" / "tokenizer_config.json").read_text())
    assert f"{config['pad_token']!r} (id 103)" in f.hint


def test_hva204_pad_is_eos(tmp_path):
    make_model(tmp_path, "llama", 103, pad_token_id=2)
    make_tokenizer(tmp_path, 103, pad="</s>")
    report = audit(tmp_path)
    (f,) = codes(report, "HVA204")
    assert f.message == "pad_token '</s>' is the eos_token (id 2): collators will mask every eos label"
    assert "add a `<pad>`" in f.hint  # no unused special token to offer
    assert not codes(report, "HVA203")


def test_pad_rules_quiet_with_distinct_pad(tmp_path):
    report = audit(checkpoint(tmp_path, "llama", 104))
    assert not codes(report, "HVA203") and not codes(report, "HVA204")


def test_hva205_template_marker_split_into_pieces(tmp_path):
    # The template uses ChatML markers the tokenizer never got: they split into ordinary pieces.
    checkpoint(tmp_path, "llama", 104, chat_template=CHATML)
    found = codes(audit(tmp_path), "HVA205")
    assert sorted(f.location.token for f in found) == ["<|im_end|>", "<|im_start|>"]
    assert all("not one" in f.message for f in found)
    assert found[0].location.file == "chat_template.jinja"


def test_hva206_template_marker_beyond_rows_and_quiet_when_resized(tmp_path):
    checkpoint(tmp_path / "bad", "llama", 104, added_special=["<|im_start|>", "<|im_end|>"], chat_template=CHATML)
    found = codes(audit(tmp_path / "bad"), "HVA206")
    assert sorted(f.message for f in found) == [
        "chat template marker '<|im_end|>' encodes to id 105 >= the 104 embedding rows",
        "chat template marker '<|im_start|>' encodes to id 104 >= the 104 embedding rows",
    ]
    make_model(tmp_path / "good", "llama", 106)
    make_tokenizer(tmp_path / "good", 104, added_special=["<|im_start|>", "<|im_end|>"], chat_template=CHATML)
    report = audit(tmp_path / "good")
    assert not codes(report, "HVA205") and not codes(report, "HVA206") and not codes(report, "HVA101")


def test_hva207_conflicting_added_tokens_decoder(tmp_path):
    checkpoint(tmp_path, "llama", 110, tokenizer_vocab=104, added_special=["<x>"])
    edit_json(tmp_path / "tokenizer_config.json",
              added_tokens_decoder={"107": {"content": "<x>", "special": True}})
    (f,) = codes(audit(tmp_path), "HVA207")
    assert f.message == "added_tokens_decoder puts '<x>' at id 107, tokenizer.json at id 104"


def test_hva207_duplicate_ids_in_tokenizer_json(tmp_path):
    checkpoint(tmp_path, "llama", 110, tokenizer_vocab=104, added_special=["<x>"])
    tj = tmp_path / "tokenizer.json"
    data = json.loads(tj.read_text())
    data["added_tokens"].append(dict(data["added_tokens"][-1], content="<y>"))
    tj.write_text(json.dumps(data))
    found = codes(audit(tmp_path), "HVA207")
    assert any("added_tokens gives id 104 to 2 tokens: ['<x>', '<y>']" == f.message for f in found)


def test_hva207_quiet_on_consistent_tokenizer(tmp_path):
    checkpoint(tmp_path, "llama", 110, tokenizer_vocab=104, added_special=["<x>"])
    edit_json(tmp_path / "tokenizer_config.json",
              added_tokens_decoder={"104": {"content": "<x>", "special": True}})
    assert not codes(audit(tmp_path), "HVA207")


def test_special_tokens_from_config_missing_from_vocab_are_added_like_transformers(tmp_path):
    # transformers adds a named special token that is not in the vocabulary at the next id.
    checkpoint(tmp_path, "llama", 104)
    edit_json(tmp_path / "tokenizer_config.json", pad_token="<newpad>")
    report = audit(tmp_path)
    (f,) = codes(report, "HVA101")
    assert "'<newpad>' (104)" in f.message
    assert report.facts["tokenizer_length"] == 105


def test_generation_config_is_optional(tmp_path):
    checkpoint(tmp_path, "llama", 104)
    (tmp_path / "generation_config.json").unlink()
    edit_json(tmp_path / "config.json", bos_token_id=DELETE)
    assert audit(tmp_path).findings == ()
