"""Generated benchmark checkpoints, cached under .bench-cache/ (git-ignored).

- ``llama_1b(path)``: a real, loadable ~1.2 B-parameter bf16 Llama-style checkpoint in 3 shards
  (vocab 128256, hidden 2048, 16 layers, untied), written tensor by tensor (bounded memory).
- ``llama_405b_headers(path)``: the Llama-3.1-405B tensor layout in 191 sparse shards whose headers
  are real and whose data is a hole (no disk used).
- both get a 128k-token byte-level BPE tokenizer (128000 merges-built tokens + 256 specials).
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np

CACHE = Path(__file__).resolve().parent.parent / ".bench-cache"
VOCAB = 128256
BASE_VOCAB = 128000
HIDDEN = 2048


def _layer_shapes(prefix: str, hidden: int, inter: int, heads: int, kv_heads: int) -> dict[str, tuple[int, ...]]:
    head_dim = hidden // heads
    return {
        f"{prefix}.input_layernorm.weight": (hidden,),
        f"{prefix}.post_attention_layernorm.weight": (hidden,),
        f"{prefix}.self_attn.q_proj.weight": (heads * head_dim, hidden),
        f"{prefix}.self_attn.k_proj.weight": (kv_heads * head_dim, hidden),
        f"{prefix}.self_attn.v_proj.weight": (kv_heads * head_dim, hidden),
        f"{prefix}.self_attn.o_proj.weight": (hidden, heads * head_dim),
        f"{prefix}.mlp.gate_proj.weight": (inter, hidden),
        f"{prefix}.mlp.up_proj.weight": (inter, hidden),
        f"{prefix}.mlp.down_proj.weight": (hidden, inter),
    }


def _llama_shapes(hidden: int, inter: int, layers: int, heads: int, kv_heads: int) -> dict[str, tuple[int, ...]]:
    shapes: dict[str, tuple[int, ...]] = {"model.embed_tokens.weight": (VOCAB, hidden)}
    for i in range(layers):
        shapes.update(_layer_shapes(f"model.layers.{i}", hidden, inter, heads, kv_heads))
    shapes["model.norm.weight"] = (hidden,)
    shapes["lm_head.weight"] = (VOCAB, hidden)
    return shapes


def _split(shapes: dict[str, tuple[int, ...]], shards: int) -> list[list[str]]:
    total = sum(int(np.prod(s)) for s in shapes.values())
    groups: list[list[str]] = [[]]
    acc = 0
    for name, shape in shapes.items():
        if acc >= total / shards * len(groups) and len(groups) < shards:
            groups.append([])
        groups[-1].append(name)
        acc += int(np.prod(shape))
    return groups


def _header(names: list[str], shapes: dict[str, tuple[int, ...]]) -> tuple[bytes, int]:
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name in names:
        size = int(np.prod(shapes[name])) * 2
        header[name] = {"dtype": "BF16", "shape": list(shapes[name]), "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw, offset


def _bf16(values: np.ndarray) -> bytes:
    bits = values.astype(np.float32).view(np.uint32)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16  # round to nearest even
    return rounded.astype(np.uint16).tobytes()


def _write_sharded(folder: Path, shapes: dict[str, tuple[int, ...]], shards: int, *, sparse: bool) -> None:
    groups = _split(shapes, shards)
    weight_map: dict[str, str] = {}
    total = 0
    rng = np.random.default_rng(0)
    for i, names in enumerate(groups, 1):
        shard = f"model-{i:05d}-of-{len(groups):05d}.safetensors"
        prefix, size = _header(names, shapes)
        with open(folder / shard, "wb") as fh:
            fh.write(prefix)
            if sparse:
                fh.truncate(len(prefix) + size)
            else:
                for name in names:
                    shape = shapes[name]
                    if len(shape) == 1:
                        fh.write(_bf16(np.ones(shape, np.float32)))
                        continue
                    for start in range(0, shape[0], 8192):  # row chunks: bounded memory
                        rows = min(8192, shape[0] - start)
                        fh.write(_bf16(rng.standard_normal((rows, *shape[1:]), np.float32) * 0.02))
        weight_map.update({n: shard for n in names})
        total += size
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index, indent=2))


def write_tokenizer(folder: Path) -> None:
    """A Llama-3-sized byte-level BPE tokenizer: 128000 tokens from merges + 256 special tokens."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {ch: i for i, ch in enumerate(sorted(alphabet))}
    tokens = list(vocab)
    merges: list[tuple[str, str]] = []
    rng = np.random.default_rng(1)
    while len(vocab) < BASE_VOCAB:
        a = tokens[int(rng.integers(0, min(len(tokens), 4000)))]
        b = tokens[int(rng.integers(0, min(len(tokens), 20000)))]
        if a + b in vocab or len(a + b) > 16:
            continue
        vocab[a + b] = len(vocab)
        tokens.append(a + b)
        merges.append((a, b))
    tok = Tokenizer(models.BPE(vocab, merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
                "<|reserved_special_token_1|>", "<|finetune_right_pad_id|>", "<|reserved_special_token_2|>",
                "<|start_header_id|>", "<|end_header_id|>", "<|eom_id|>", "<|eot_id|>", "<|python_tag|>"]
    specials += [f"<|reserved_special_token_{i}|>" for i in range(3, 3 + VOCAB - BASE_VOCAB - len(specials))]
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in specials])
    tok.save(str(folder / "tokenizer.json"))
    template = (
        "{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>\n\n"
        "{{ m['content'] }}<|eot_id|>{% endfor %}"
    )
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "TokenizersBackend", "bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>",
        "model_max_length": 131072, "chat_template": template,
    }, indent=2))


def _config(folder: Path, **shape: int) -> None:
    config = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": VOCAB,
        "hidden_size": shape["hidden"], "intermediate_size": shape["inter"], "num_hidden_layers": shape["layers"],
        "num_attention_heads": shape["heads"], "num_key_value_heads": shape["kv_heads"],
        "max_position_embeddings": 131072, "rope_theta": 500000.0, "rms_norm_eps": 1e-5,
        "tie_word_embeddings": False, "bos_token_id": 128000, "eos_token_id": 128009, "torch_dtype": "bfloat16",
    }
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    (folder / "generation_config.json").write_text(json.dumps(
        {"bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009]}, indent=2))


def _build(folder: Path, shape: dict[str, int], shards: int, sparse: bool) -> Path:
    if (folder / "DONE").exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    _config(folder, **shape)
    write_tokenizer(folder)
    _write_sharded(folder, _llama_shapes(**shape), shards, sparse=sparse)
    (folder / "DONE").write_text("ok\n")
    return folder


LLAMA_1B = dict(hidden=HIDDEN, inter=5632, layers=16, heads=32, kv_heads=4)
LLAMA_405B = dict(hidden=16384, inter=53248, layers=126, heads=128, kv_heads=8)


def llama_1b(folder: Path | None = None) -> Path:
    """The 1.2 B checkpoint (default: cached in .bench-cache/); reused when already complete."""
    return _build(Path(folder) if folder else CACHE / "llama-1.2b-bf16", LLAMA_1B, 3, sparse=False)


def llama_405b_headers(folder: Path | None = None) -> Path:
    return _build(Path(folder) if folder else CACHE / "llama-405b-headers", LLAMA_405B, 191, sparse=True)
