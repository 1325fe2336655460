"""The converter's vocabulary path and llama.cpp's built-in template engine (group "gguf paths"): a folder
built to steer ``--target gguf``'s choice of the converter's reader (HVA925/HVA926), and a template built to
make its render for the built-in engine's comparison expensive (HVA927). A folder the converter cannot
convert, or converts into a GGUF llama.cpp refuses, must FAIL the gate (exit 1)."""

from __future__ import annotations

from pathlib import Path

from malformed import CONFIG, TOKENIZER_CONFIG, VOCAB, case, tokenizer_json, write_json

GROUP = "gguf paths"


@case(GROUP, exit_codes=(1,))
def gemma_architecture_without_tokenizer_model(folder: Path) -> list[str]:
    """A Gemma config over tokenizer.json alone: GemmaModel.set_vocab reads tokenizer.model only (HVA925)."""
    write_json(folder / "config.json", {**CONFIG, "model_type": "gemma", "architectures": ["GemmaForCausalLM"]})
    return [str(folder), "--target", "gguf"]


@case(GROUP, exit_codes=(1,))
def llama_byte_fallback_bpe_with_a_token_past_the_rows(folder: Path) -> list[str]:
    """tokenizer.json claims to be a SentencePiece-converted BPE (byte_fallback, a Sequence decoder) and holds an
    added token past the rows: LlamaHfVocab takes it and writes more tokens than rows (HVA926)."""
    tok = tokenizer_json()
    tok["model"] = {"type": "BPE", "vocab": tok["model"]["vocab"], "merges": [], "byte_fallback": True,
                    "unk_token": "<unk>"}
    tok["decoder"] = {"type": "Sequence", "decoders": [{"type": "ByteFallback"}, {"type": "Fuse"}]}
    tok["added_tokens"].append({"id": len(VOCAB), "content": "<extra>", "single_word": False, "lstrip": False,
                                "rstrip": False, "normalized": False, "special": False})
    write_json(folder / "tokenizer.json", tok)
    return [str(folder), "--target", "gguf"]


@case(GROUP, exit_codes=(0, 1))
def chatml_looking_template_bomb_under_target_gguf(folder: Path) -> list[str]:
    """A template with <|im_start|> (ChatML to llama.cpp's built-in engine) that asks for a terabyte string when
    rendered for the comparison: the render is budgeted, the template unreported by HVA927 (it cannot be compared)."""
    write_json(folder / "tokenizer_config.json",
               {**TOKENIZER_CONFIG, "chat_template": "<|im_start|>{{ 'a' * 10**12 }}<|im_end|>"})
    return [str(folder), "--target", "gguf"]


@case(GROUP, exit_codes=(0, 1))
def added_tokens_json_with_an_infinite_id_on_the_sentencepiece_path(folder: Path) -> list[str]:
    """A tokenizer.model beside added_tokens.json whose id is 1e999 (JSON's infinity): the SentencePiece path's
    reader of added_tokens.json skips it (the converter's "ignore token ... out of range"), it is no id: the audit
    goes on (it was "unexpected OverflowError", exit 2)."""
    (folder / "tokenizer.model").write_bytes(b"\x00" * 16)
    (folder / "added_tokens.json").write_text('{"<x>": 1e999}', encoding="utf-8")
    write_json(folder / "config.json", {**CONFIG, "architectures": ["LlamaForCausalLM"]})
    return [str(folder), "--target", "gguf"]
