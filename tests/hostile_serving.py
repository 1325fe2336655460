"""Serving engines (group "serving engines"): a checkpoint whose lm_head layout, attention geometry or chat
template is built to mislead a consumer's prediction (HVA96x), or to make the budgeted template render expensive.
A layout that transformers or vLLM gets wrong must FAIL the gate (exit 1)."""

from __future__ import annotations

import struct
from pathlib import Path

from malformed import CONFIG, HIDDEN, TOKENIZER_CONFIG, VOCAB, case, embedding_header, safetensors_bytes, write_json

GROUP = "serving engines"


@case(GROUP, exit_codes=(1,))
def untied_flag_with_lm_head_deleted(folder: Path) -> list[str]:
    """tie_word_embeddings false and no lm_head.weight: transformers serves a random head (HVA960)."""
    header, data = embedding_header()
    del header["lm_head.weight"]
    (folder / "model.safetensors").write_bytes(safetensors_bytes(header, data[: len(VOCAB) * HIDDEN * 4]))
    return [str(folder)]


@case(GROUP, exit_codes=(1,))
def tied_flag_over_a_different_lm_head(folder: Path) -> list[str]:
    """tie_word_embeddings true over a saved lm_head that is not the embedding: transformers serves the saved head,
    vLLM the embedding (HVA962 with --weights)."""
    write_json(folder / "config.json", {**CONFIG, "tie_word_embeddings": True})
    header, data = embedding_header()
    size = len(VOCAB) * HIDDEN * 4
    head = struct.pack(f"<{len(VOCAB) * HIDDEN}f", *[0.01 * (i % 7 - 3) for i in range(len(VOCAB) * HIDDEN)])
    (folder / "model.safetensors").write_bytes(safetensors_bytes(header, data[:size] + head))
    return [str(folder), "--weights"]


@case(GROUP, exit_codes=(1,))
def tp_over_absurd_head_counts(folder: Path) -> list[str]:
    """Head counts of 2**80 and a string: --tp reads only positive integers; the padded vocabulary (8 rows pad to
    64) does not split 3 ways (HVA965)."""
    write_json(folder / "config.json", {**CONFIG, "num_attention_heads": 2**80, "num_key_value_heads": "8"})
    return [str(folder), "--target", "vllm", "--tp", "3"]


@case(GROUP, exit_codes=(0, 1))
def chat_template_bomb_under_target_vllm(folder: Path) -> list[str]:
    """A template that asks for a terabyte string: the serving render is budgeted like the dataset scan's (HVA966)."""
    write_json(folder / "tokenizer_config.json", {**TOKENIZER_CONFIG, "chat_template": "{{ 'a' * 10**12 }}"})
    return [str(folder), "--target", "vllm"]
