"""Tiny checkpoints saved by transformers 5 (the installed one) for ``--target 'transformers<5'``: each holds one
class of the files a transformers 4.x reader refuses or reads differently. ``scripts/transformers4_verdicts.py``
loads each with transformers 4.57.6 and records what happened (tests/data/transformers4_verdicts.json); the
tests rebuild the same folders and replay those verdicts.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TEMPLATE = "{% for m in messages %}<|im_start|>{{ m['content'] }}<|im_end|>{% endfor %}"
EXTRAS = ["<|im_start|>", "<|im_end|>"]
LLAMA3_ROPE = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 64, "rope_theta": 500000.0}


def _tokenizer(folder: Path, extras: bool, template: bool) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {f"t{i}": i for i in range(100)}
    vocab.update({"<s>": 100, "</s>": 101, "<unk>": 102})
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    kwargs: dict[str, Any] = {"extra_special_tokens": list(EXTRAS)} if extras else {}
    tok = PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
                                  **kwargs)
    if template:
        tok.chat_template = TEMPLATE
    tok.save_pretrained(folder)


def _model(folder: Path, rope: dict[str, Any], rows: int = 105) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=rows, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=2, bos_token_id=100, eos_token_id=101,
                         rope_parameters=dict(rope), tie_word_embeddings=False)
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(folder)


def _edit(folder: Path, name: str, change: Callable[[dict[str, Any]], None]) -> None:
    path = folder / name
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def _v4_class(data: dict[str, Any]) -> None:
    data["tokenizer_class"] = "PreTrainedTokenizerFast"  # isolates the other classes from HVA970


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable[[Path], None]
    says: tuple[str, ...]  # the HVA97x codes the audit must give (decided by the recorded 4.x verdict)


def chat_llama(folder: Path) -> None:
    """A chat model as transformers 5 saves it: every class at once."""
    _tokenizer(folder, extras=True, template=True)
    _model(folder, LLAMA3_ROPE)


def plain(folder: Path) -> None:
    """No extra special tokens, no template, rope_theta 10000 (4.x's default): only the class name."""
    _tokenizer(folder, extras=False, template=False)
    _model(folder, {"rope_type": "default", "rope_theta": 10000.0})


def extra_list(folder: Path) -> None:
    _tokenizer(folder, extras=True, template=False)
    _edit(folder, "tokenizer_config.json", _v4_class)
    _model(folder, {"rope_type": "default", "rope_theta": 10000.0})


def rope_theta(folder: Path) -> None:
    _tokenizer(folder, extras=False, template=False)
    _edit(folder, "tokenizer_config.json", _v4_class)
    _model(folder, {"rope_type": "default", "rope_theta": 1000000.0})


def jinja_template(folder: Path) -> None:
    _tokenizer(folder, extras=False, template=True)
    _edit(folder, "tokenizer_config.json", _v4_class)
    _model(folder, {"rope_type": "default", "rope_theta": 10000.0})


def new_model_type(folder: Path) -> None:
    """A config.json naming an architecture transformers 5 added (``qwen3_5_text``) over a Llama's weights."""
    plain(folder)
    _edit(folder, "tokenizer_config.json", _v4_class)
    _edit(folder, "config.json", lambda d: d.update(model_type="qwen3_5_text", architectures=["Qwen3_5ForCausalLM"]))


def gemma3_rope(folder: Path) -> None:
    """Gemma-3 text (as the 4B and larger): rope_parameters per layer type, linear scaling on full attention."""
    import torch
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    _tokenizer(folder, extras=False, template=False)
    _edit(folder, "tokenizer_config.json", _v4_class)
    config = Gemma3TextConfig(vocab_size=105, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                              num_attention_heads=2, num_key_value_heads=1, head_dim=8, bos_token_id=100,
                              eos_token_id=101, pad_token_id=102, rope_parameters={
                                  "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0},
                                  "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}})
    torch.manual_seed(0)
    Gemma3ForCausalLM(config).save_pretrained(folder)


def phi3_longrope(folder: Path) -> None:
    """Phi-3-mini-128k: longrope scaling, original_max_position_embeddings at the top (5 writes it in
    rope_parameters too); 4.x's Phi3Config accepts a rope_scaling of type, short_factor and long_factor only."""
    import torch
    from transformers import Phi3Config, Phi3ForCausalLM

    _tokenizer(folder, extras=False, template=False)
    _edit(folder, "tokenizer_config.json", _v4_class)
    config = Phi3Config(vocab_size=105, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                        num_attention_heads=2, num_key_value_heads=2, bos_token_id=100, eos_token_id=101,
                        pad_token_id=102, max_position_embeddings=256, original_max_position_embeddings=64,
                        rope_parameters={"rope_type": "longrope", "type": "longrope", "short_factor": [1.0] * 4,
                                         "long_factor": [1.5] * 4, "rope_theta": 10000.0})
    torch.manual_seed(0)
    Phi3ForCausalLM(config).save_pretrained(folder)


def phi_partial_rotary(folder: Path) -> None:
    """Phi-2: partial_rotary_factor 0.4, which 5 writes only inside rope_parameters (4.x's default is 0.5)."""
    import torch
    from transformers import PhiConfig, PhiForCausalLM

    _tokenizer(folder, extras=False, template=False)
    _edit(folder, "tokenizer_config.json", _v4_class)
    config = PhiConfig(vocab_size=105, hidden_size=40, intermediate_size=32, num_hidden_layers=1,
                       num_attention_heads=2, bos_token_id=100, eos_token_id=101,
                       rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.4})
    torch.manual_seed(0)
    PhiForCausalLM(config).save_pretrained(folder)


CASES = (
    Case("v5_chat_llama", chat_llama, ("HVA970", "HVA971", "HVA972", "HVA973")),
    Case("v5_plain", plain, ("HVA970",)),
    Case("v5_extra_special_tokens_list", extra_list, ("HVA971",)),
    Case("v5_rope_theta_only_in_rope_parameters", rope_theta, ("HVA972",)),
    Case("v5_gemma3_rope_per_layer_type", gemma3_rope, ("HVA972",)),
    Case("v5_phi3_longrope", phi3_longrope, ("HVA972",)),
    Case("v5_phi_partial_rotary_factor", phi_partial_rotary, ("HVA972",)),
    Case("v5_template_only_in_jinja", jinja_template, ("HVA973",)),
    Case("v5_model_type_unknown_to_4x", new_model_type, ("HVA974",)),
)
CASE = {c.name: c for c in CASES}


def build(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    CASE[name].build(folder)
    return folder
