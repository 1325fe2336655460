"""Generated benchmark checkpoints, written directly with numpy (no torch model is ever built).

``llama_1b(path)``: a Llama-3.2-1B-shaped, untied, bf16 checkpoint in 3 safetensors shards of ~1 GB
(vocab 128256, hidden 2048, 16 layers) plus a 128256-token tokenizer.json (128000 words + 256
special tokens, Llama-3 names). Cached: a folder that is already complete is reused.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np

VOCAB, BASE, HIDDEN, LAYERS, INTER, HEADS, KV_HEADS = 128256, 128000, 2048, 16, 8192, 32, 8
SPECIALS = ["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
            "<|reserved_special_token_1|>", "<|finetune_right_pad_id|>", "<|reserved_special_token_2|>",
            "<|start_header_id|>", "<|end_header_id|>", "<|eom_id|>", "<|eot_id|>", "<|python_tag|>"]
SPECIALS += [f"<|reserved_special_token_{i}|>" for i in range(3, 3 + 256 - len(SPECIALS))]


def _tensors() -> list[tuple[str, tuple[int, ...]]]:
    head_dim = HIDDEN // HEADS
    out: list[tuple[str, tuple[int, ...]]] = [("model.embed_tokens.weight", (VOCAB, HIDDEN))]
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        out += [
            (p + "input_layernorm.weight", (HIDDEN,)),
            (p + "self_attn.q_proj.weight", (HEADS * head_dim, HIDDEN)),
            (p + "self_attn.k_proj.weight", (KV_HEADS * head_dim, HIDDEN)),
            (p + "self_attn.v_proj.weight", (KV_HEADS * head_dim, HIDDEN)),
            (p + "self_attn.o_proj.weight", (HIDDEN, HEADS * head_dim)),
            (p + "post_attention_layernorm.weight", (HIDDEN,)),
            (p + "mlp.gate_proj.weight", (INTER, HIDDEN)),
            (p + "mlp.up_proj.weight", (INTER, HIDDEN)),
            (p + "mlp.down_proj.weight", (HIDDEN, INTER)),
        ]
    out += [("model.norm.weight", (HIDDEN,)), ("lm_head.weight", (VOCAB, HIDDEN))]
    return out


def _noise_bf16(n: int, rng: np.random.Generator, pool: np.ndarray) -> np.ndarray:
    """n bf16 values (as uint16): a random window of a pre-drawn N(0, 0.02) pool, cheap to produce."""
    start = int(rng.integers(0, pool.size - 1))
    reps = -(-(n + start) // pool.size)
    return np.tile(pool, reps)[start : start + n] if reps > 1 else pool[start : start + n]


def _write_shard(path: Path, names: list[tuple[str, tuple[int, ...]]], rng, pool) -> int:
    header: dict = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, shape in names:
        size = int(np.prod(shape)) * 2
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as fh:
        fh.write(struct.pack("<Q", len(raw)) + raw)
        for name, shape in names:
            n = int(np.prod(shape))
            if name.endswith("norm.weight"):
                fh.write(np.full(n, 0x3F80, dtype=np.uint16).tobytes())  # 1.0
            else:
                fh.writelines(_noise_bf16(min(1 << 26, n - s), rng, pool).tobytes() for s in range(0, n, 1 << 26))
    return offset


def _tokenizer(folder: Path) -> None:
    from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers

    vocab = {f"w{i}": i for i in range(BASE)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="w0"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in SPECIALS])
    tok.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "TokenizersBackend", "bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>",
        "pad_token": "<|finetune_right_pad_id|>", "model_max_length": 131072,
    }, indent=2))


def llama_1b(path: Path) -> Path:
    """Create (or reuse) the sharded 1B-class checkpoint at ``path``."""
    path = Path(path)
    done = path.with_name(path.name + ".complete")
    if done.exists():
        return path
    path.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    pool = (rng.standard_normal(1 << 24, dtype=np.float32) * 0.02).view(np.uint32)
    pool = ((pool + 0x7FFF + ((pool >> 16) & 1)) >> 16).astype(np.uint16)
    tensors = _tensors()
    sizes = [int(np.prod(s)) * 2 for _, s in tensors]
    target = sum(sizes) / 3
    shards: list[list[tuple[str, tuple[int, ...]]]] = [[]]
    acc = 0
    for item, size in zip(tensors, sizes):
        if acc >= target and len(shards) < 3:
            shards.append([])
            acc = 0
        shards[-1].append(item)
        acc += size
    weight_map, total = {}, 0
    for i, names in enumerate(shards, 1):
        file = f"model-{i:05d}-of-{len(shards):05d}.safetensors"
        total += _write_shard(path / file, names, rng, pool)
        weight_map.update({n: file for n, _ in names})
    (path / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}, indent=2))
    (path / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": VOCAB,
        "hidden_size": HIDDEN, "intermediate_size": INTER, "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS, "num_key_value_heads": KV_HEADS, "head_dim": HIDDEN // HEADS,
        "max_position_embeddings": 131072, "rope_theta": 500000.0, "rms_norm_eps": 1e-5,
        "tie_word_embeddings": False, "bos_token_id": 128000, "eos_token_id": 128009,
        "pad_token_id": 128004, "hidden_act": "silu", "dtype": "bfloat16",
    }, indent=2))
    (path / "generation_config.json").write_text(json.dumps(
        {"bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009], "pad_token_id": 128004}, indent=2))
    _tokenizer(path)
    done.touch()
    return path
