"""Checkpoints with known untrained rows, built with transformers' own classes (for HVA6xx tests)."""

from __future__ import annotations

from pathlib import Path

import torch
from builders import CHATML, make_tokenizer

CHAT_TOKENS = ["<|im_start|>", "<|im_end|>"]


def llama_with_rows(
    folder: Path,
    *,
    base: int = 100,
    added: list[str] | None = None,
    zero: list[str] | None = None,
    scale: dict[str, float] | None = None,
    tied: bool = False,
    dtype: torch.dtype = torch.float32,
    mean_resizing: bool = False,
    pad_to_multiple_of: int | None = None,
    chat_template: str | None = CHATML,
    seed: int = 0,
) -> Path:
    """A tiny Llama whose tokenizer has ``added`` special tokens (ChatML by default) and whose model was
    resized to cover them (``mean_resizing`` as transformers does it); then the rows of the tokens in
    ``zero`` are zeroed and those in ``scale`` multiplied, on both sides."""
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    added = CHAT_TOKENS if added is None else added
    make_tokenizer(folder, base, added_special=added, chat_template=chat_template)
    tok = AutoTokenizer.from_pretrained(folder)
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=base, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=128,
                      bos_token_id=1, eos_token_id=2, pad_token_id=3, tie_word_embeddings=tied)
    model = LlamaForCausalLM(cfg)
    if len(tok) != base or pad_to_multiple_of:
        model.resize_token_embeddings(len(tok), pad_to_multiple_of=pad_to_multiple_of, mean_resizing=mean_resizing)
    with torch.no_grad():
        for content in zero or []:
            i = tok.convert_tokens_to_ids(content)
            model.get_input_embeddings().weight[i] = 0
            model.get_output_embeddings().weight[i] = 0
        for content, factor in (scale or {}).items():
            i = tok.convert_tokens_to_ids(content)
            model.get_input_embeddings().weight[i] *= factor
            if not tied:
                model.get_output_embeddings().weight[i] *= factor
    model.to(dtype).save_pretrained(folder)
    return folder
