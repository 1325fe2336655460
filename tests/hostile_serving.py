"""Serving engines (group "serving engines"): a checkpoint whose lm_head layout, attention geometry or chat
template is built to mislead a consumer's prediction (HVA96x), or to make the budgeted template render expensive.
A layout that transformers or vLLM gets wrong must FAIL the gate (exit 1)."""

from __future__ import annotations

import json
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


# ---- --target sglang | tgi | mlx-lm (HVA980-HVA983): the engines' own template and stop-id rules, from their entries

CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


@case(GROUP, exit_codes=(0, 1))
def tgi_tokenizer_config_fields_of_every_wrong_type(folder: Path) -> list[str]:
    """tokenizer_config.json's fields TGI's router types strictly, each of the wrong type (a nested list as the
    chat template, a number as add_bos_token, an object without content as eos_token): read as TGI reads them,
    the file is dropped (HVA980), never a traceback."""
    write_json(folder / "tokenizer_config.json", {
        **TOKENIZER_CONFIG, "chat_template": [[["x"] * 1000] * 100], "add_bos_token": 7,
        "eos_token": {"lstrip": True}, "completion_template": {"a": 1}})
    return [str(folder), "--target", "tgi"]


@case(GROUP, exit_codes=(0, 1))
def tgi_chat_template_json_with_many_named_templates(folder: Path) -> list[str]:
    """chat_template.json holding 200,000 named templates, none "default": TGI takes only the default; the list is
    walked once, no template is rendered (HVA980)."""
    templates = [{"name": f"t{i}", "template": "{{ 'x' }}"} for i in range(200_000)]
    (folder / "chat_template.json").write_text(json.dumps({"chat_template": templates}), encoding="utf-8")
    return [str(folder), "--target", "tgi"]


@case(GROUP, exit_codes=(0, 1))
def tgi_processor_config_with_absurd_image_seq_len(folder: Path) -> list[str]:
    """processor_config.json with image_seq_len 2**200 (past the usize TGI parses it as: the file is dropped) and a
    template bomb: read as data, never rendered."""
    write_json(folder / "processor_config.json", {"image_seq_len": 2**200, "chat_template": "{{ 'a' * 10**12 }}"})
    return [str(folder), "--target", "tgi"]


@case(GROUP, exit_codes=(1,))
def turn_end_tgi_does_not_stop_at(folder: Path) -> list[str]:
    """A template that closes each turn with "d" (id 7), which generation_config.json names as its eos_token_id, as
    an integer: TGI reads only a list there and stops at the tokenizer's </s> alone, so generation runs past every
    answer (HVA981)."""
    template = ("{% for m in messages %}{{ m['role'] }} {{ m['content'] }} d\n{% endfor %}"
                "{% if add_generation_prompt %}assistant {% endif %}")
    write_json(folder / "tokenizer_config.json", {**TOKENIZER_CONFIG, "chat_template": template})
    write_json(folder / "generation_config.json", {"bos_token_id": 1, "eos_token_id": 7})
    return [str(folder), "--target", "tgi"]


@case(GROUP, exit_codes=(1,))
def untied_lm_head_missing_under_target_sglang(folder: Path) -> list[str]:
    """tie_word_embeddings false, no lm_head.weight, served by SGLang: it loads without a word and serves an
    uninitialised head (HVA983, with HVA960)."""
    header, data = embedding_header()
    del header["lm_head.weight"]
    (folder / "model.safetensors").write_bytes(safetensors_bytes(header, data[: len(VOCAB) * HIDDEN * 4]))
    return [str(folder), "--target", "sglang"]


@case(GROUP, exit_codes=(1,))
def tp_over_absurd_head_counts_for_tgi(folder: Path) -> list[str]:
    """Head counts of 2**80 and a string under TGI's --num-shard 3: only positive integers are read (HVA982)."""
    write_json(folder / "config.json", {**CONFIG, "num_attention_heads": 2**80, "num_key_value_heads": "8"})
    return [str(folder), "--target", "tgi", "--tp", "3"]


@case(GROUP, exit_codes=(0, 1))
def chat_template_bomb_under_target_sglang(folder: Path) -> list[str]:
    """A template that asks for a terabyte string, as SGLang and mlx-lm would render it: budgeted (HVA980)."""
    write_json(folder / "tokenizer_config.json", {**TOKENIZER_CONFIG, "chat_template": "{{ 'a' * 10**12 }}"})
    return [str(folder), "--target", "sglang"]


@case(GROUP, exit_codes=(2,), says="--tp needs --target vllm, sglang or tgi")
def tp_under_target_mlx_lm(folder: Path) -> list[str]:
    """--tp with an engine that has no tensor parallelism: one line, exit 2."""
    return [str(folder), "--target", "mlx-lm", "--tp", "2"]
