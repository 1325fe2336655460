"""The fast path (tokenizers library) gives exactly the facts AutoTokenizer gives users."""

from __future__ import annotations

import json
import shutil

import pytest
from builders import CHATML, edit_json, make_tokenizer

from hf_vocab_audit.errors import AuditError
from hf_vocab_audit.facts.tokenizer.folder import load_tokenizer, load_tokenizer_via_transformers

CASES = {
    "llama": dict(style="llama"),
    "llama-added": dict(style="llama", added=["hello", "world"], added_special=["<|im_start|>", "<|im_end|>"],
                        chat_template=CHATML, model_max_length=2048),
    "no-pad": dict(style="llama", pad=None),
    "pad-eos": dict(style="llama", pad="</s>"),
    "bert": dict(style="bert", model_max_length=64),
    "bert-added": dict(style="bert", added=["newword"], added_special=["<x>"]),
    "roberta": dict(style="roberta", model_max_length=64),
    "t5": dict(style="t5"),
}


def _facts_view(f):
    return {
        "length": f.length,
        "max_id": f.max_id,
        "ids": f.ids,
        "added": [(t.id, t.content) for t in f.added_tokens],
        "special": f.special_tokens,
        "extra": f.extra_special_tokens,
        "model_max_length": f.model_max_length,
        "chat_template": f.chat_template,
        "model_input_names": f.model_input_names,
        "pair_type_ids": f.pair_type_ids,
    }


def _check_parity(folder):
    from transformers import AutoTokenizer

    fast = load_tokenizer(folder)
    reference = load_tokenizer_via_transformers(folder)
    assert fast.source == "tokenizers" and reference.source == "transformers"
    assert _facts_view(fast) == _facts_view(reference)
    tok = AutoTokenizer.from_pretrained(folder)
    assert fast.length == len(tok)
    assert dict(fast.special_tokens) == {
        r: (str(getattr(tok, f"{r}_token")), getattr(tok, f"{r}_token_id"))
        for r in ("bos", "eos", "unk", "sep", "pad", "cls", "mask")
        if getattr(tok, f"{r}_token", None) is not None
    }
    pair = tok("w1 w2", "w3")
    assert ("token_type_ids" in pair) == fast.returns_token_type_ids
    if fast.returns_token_type_ids:
        assert tuple(sorted(set(pair["token_type_ids"]))) == fast.pair_type_ids
    return fast


@pytest.mark.parametrize("case", sorted(CASES))
def test_fast_path_matches_auto_tokenizer(tmp_path, case):
    make_tokenizer(tmp_path, 40, **CASES[case])
    _check_parity(tmp_path)


def test_minilm_tokenizer_parity(minilm_dir, tmp_path):
    fast = _check_parity(minilm_dir)
    assert fast.length == 30522 and fast.pair_type_ids == (0, 1) and fast.model_max_length == 512


def test_config_special_token_missing_from_vocab(tmp_path):
    make_tokenizer(tmp_path, 40)
    edit_json(tmp_path / "tokenizer_config.json", pad_token="<brand-new-pad>")
    fast = _check_parity(tmp_path)
    assert fast.special_tokens["pad"] == ("<brand-new-pad>", 40)


@pytest.mark.parametrize("with_decoder", [True, False])
def test_v4_style_files(tmp_path, with_decoder):
    """special_tokens_map.json counts only when tokenizer_config.json has no added_tokens_decoder."""
    make_tokenizer(tmp_path, 40, added_special=["<extra>"])
    config = json.loads((tmp_path / "tokenizer_config.json").read_text())
    (tmp_path / "special_tokens_map.json").write_text(json.dumps({"bos_token": "<s>", "eos_token": "</s>"}))
    config.pop("bos_token", None)
    if with_decoder:
        config["added_tokens_decoder"] = {"40": {"content": "<extra>", "special": True}}
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config))
    fast = _check_parity(tmp_path)
    assert ("bos" in fast.special_tokens) == (not with_decoder)


def test_slow_only_files_fall_back_to_transformers(minilm_dir, tmp_path):
    for name in ("vocab.txt", "tokenizer_config.json", "special_tokens_map.json", "config.json"):
        shutil.copy(minilm_dir / name, tmp_path / name)
    facts = load_tokenizer(tmp_path)
    assert facts.source == "transformers" and facts.length == 30522
    assert facts.special_tokens["cls"] == ("[CLS]", 101)


@pytest.mark.parametrize("where", ["top", "nested"])
def test_transformers_path_refuses_links_out_at_any_depth(tmp_path, where):
    """The reference path hands the folder to transformers, which opens names we do not control
    (``additional_chat_templates/*.jinja``): it walks the whole tree (check_tree), not only the top level."""
    folder = tmp_path / "tok"
    make_tokenizer(folder, style="llama")
    secret = tmp_path / "secret.jinja"
    secret.write_text("{{ 'outside' }}")
    sub = folder / "additional_chat_templates" if where == "nested" else folder
    sub.mkdir(exist_ok=True)
    (sub / "tool.jinja").symlink_to(secret)
    with pytest.raises(AuditError, match="outside the tokenizer folder") as err:
        load_tokenizer_via_transformers(folder)
    assert "tool.jinja" in str(err.value)
    (sub / "tool.jinja").unlink()
    assert load_tokenizer_via_transformers(folder).source == "transformers"  # quiet on the healthy folder
