"""The surgical path against transformers' own resize_token_embeddings, on real tiny models."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from hf_vocab_audit.fix import fix_checkpoint
from hf_vocab_audit.io.dtypes import from_float32, to_float32
from hf_vocab_audit.io.safetensors_header import read_header

from .fixkit import broken, state


def reference(folder, rows):
    """What transformers gives: from_pretrained + resize_token_embeddings(rows), as a state dict."""
    model = AutoModelForCausalLM.from_pretrained(folder, dtype="auto")
    model.resize_token_embeddings(rows)
    return {k: v.detach() for k, v in model.state_dict().items()}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("tied", [False, True])
def test_grows_like_transformers_and_keeps_every_old_byte(tmp_path, guard_input, dtype, tied):
    src = guard_input(broken(tmp_path / "m", dtype=dtype, tie_word_embeddings=tied))
    tok = AutoTokenizer.from_pretrained(src)
    ids = torch.arange(len(tok)).unsqueeze(0)
    with pytest.raises(IndexError, match="index out of range"):
        AutoModelForCausalLM.from_pretrained(src)(input_ids=ids)

    report = fix_checkpoint(src, output=tmp_path / "out", verify_load="always")

    assert [f.code for f in report.fixes if f.action == "grow-embeddings"] == (["HVA101"] if tied else
                                                                                ["HVA101", "HVA102"])
    assert not [f for f in report.findings if f.code in ("HVA101", "HVA102", "HVA103")]
    assert report.exit_code("error") == 0
    fixed = state(tmp_path / "out")
    ref = reference(src, 106)
    emb = fixed["model.embed_tokens.weight"]
    assert emb.shape == (106, 16) and emb.dtype == dtype
    assert ("lm_head.weight" in fixed) is (not tied)
    for name, value in fixed.items():
        old = ref[name]
        if value.shape[0] == 106:
            assert torch.equal(value[:104], old[:104]), name
            expected = value[:104].double().mean(0)  # the mean of the trained rows, up to dtype rounding
            ulp = {torch.float32: 1e-6, torch.float16: 2**-10, torch.bfloat16: 2**-7}[dtype]
            torch.testing.assert_close(value[104].double(), expected, rtol=ulp, atol=1e-7)
            assert torch.equal(value[104], value[105]), name
        else:
            assert torch.equal(value, old), name
    model = AutoModelForCausalLM.from_pretrained(tmp_path / "out")
    assert (model.lm_head.weight is model.model.embed_tokens.weight) is tied
    logits = model(input_ids=ids).logits
    assert logits.shape == (1, 106, 106) and torch.isfinite(logits).all()
    assert json.loads((tmp_path / "out" / "config.json").read_text())["vocab_size"] == 106


def test_sharded_rewrites_only_the_shards_that_change(tmp_path, guard_input):
    src = tmp_path / "m"
    broken(src, hidden_size=64, intermediate_size=128, num_hidden_layers=2, tie_word_embeddings=False)
    model = AutoModelForCausalLM.from_pretrained(src)
    for f in src.glob("model*.safetensors"):
        f.unlink()
    model.save_pretrained(src, max_shard_size="60KB")
    guard_input(src)
    index = json.loads((src / "model.safetensors.index.json").read_text())
    shards = sorted(set(index["weight_map"].values()))
    assert len(shards) >= 3
    changed = {index["weight_map"]["model.embed_tokens.weight"], index["weight_map"]["lm_head.weight"]}

    fix_checkpoint(src, output=tmp_path / "out")

    out = tmp_path / "out"
    new_index = json.loads((out / "model.safetensors.index.json").read_text())
    assert new_index["weight_map"] == index["weight_map"]
    total = sum(t.nbytes for s in shards for t in read_header(out / s, s).tensors)
    assert new_index["metadata"]["total_size"] == total == index["metadata"]["total_size"] + 2 * 2 * 64 * 4
    for shard in shards:
        same = (out / shard).read_bytes() == (src / shard).read_bytes()
        assert same is (shard not in changed), shard
        assert read_header(out / shard, shard).metadata == read_header(src / shard, shard).metadata
    reloaded = AutoModelForCausalLM.from_pretrained(out)
    assert reloaded.model.embed_tokens.weight.shape == (106, 64)


def test_bf16_rounding_matches_torch():
    values = torch.randn(4096) * torch.logspace(-30, 30, 4096)
    values[:4] = torch.tensor([float("inf"), -float("inf"), 0.0, -0.0])
    ours = from_float32(values.numpy(), "BF16")
    assert np.array_equal(ours, values.to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16))
    back = to_float32(ours, "BF16")
    assert np.array_equal(back, values.to(torch.bfloat16).float().numpy())


def test_final_logits_bias_grows_with_zeros_like_transformers(tmp_path, guard_input):
    from transformers import BartForConditionalGeneration

    src = guard_input(broken(tmp_path / "m", "bart", 104))
    fix_checkpoint(src, output=tmp_path / "out", verify_load="always")
    fixed = state(tmp_path / "out")
    assert fixed["final_logits_bias"].shape == (1, 106)
    ref = BartForConditionalGeneration.from_pretrained(src)
    ref.resize_token_embeddings(106)
    assert torch.equal(fixed["final_logits_bias"], ref.final_logits_bias)
    assert torch.equal(fixed["model.shared.weight"][:104], ref.model.shared.weight[:104].detach())


def test_bert_mlm_prediction_bias_grows(tmp_path, guard_input):
    src = guard_input(broken(tmp_path / "m", "bert", 100))
    report = fix_checkpoint(src, output=tmp_path / "out", verify_load="always")
    grown = {g["name"]: g for g in report.to_dict()["fix"]["verification"]["grown"]}
    assert grown["cls.predictions.bias"]["new"] == 102 and grown["cls.predictions.bias"]["fill"] == "mean"
    fixed, before = state(tmp_path / "out"), state(src)
    assert torch.equal(fixed["cls.predictions.bias"][:100], before["cls.predictions.bias"])
    assert torch.allclose(fixed["cls.predictions.bias"][100:], before["cls.predictions.bias"].mean())


@pytest.mark.parametrize(("dtype", "width"), [("BF16", 64), ("BF16", 63), ("F16", 64), ("F32", 64)])
@pytest.mark.parametrize("trained", [37, 300, 301])
@pytest.mark.parametrize("leave_out", [None, [0, 5, 8, 9, 299, 400]])
def test_mean_of_rows_in_blocks_is_the_mean_of_the_widened_rows_bit_for_bit(tmp_path, dtype, width, trained, leave_out,
                                                                             monkeypatch):
    """The new rows' mean, taken in blocks from a memory map (bf16 as 32-bit pairs, never widened), equals
    the float32 sums of the widened rows block by block (float64 across blocks), bit for bit: several
    blocks, the last one partial, rows left out."""
    import numpy as np
    import torch
    from safetensors.torch import save_file

    from hf_vocab_audit.io import rows as rows_module
    from hf_vocab_audit.io.dtypes import to_float32
    from hf_vocab_audit.io.safetensors_header import read_header

    itemsize = {"BF16": 2, "F16": 2, "F32": 4}[dtype]
    step = 8  # rows per block
    monkeypatch.setattr(rows_module, "MEAN_CHUNK_BYTES", width * itemsize * step)
    monkeypatch.setattr(rows_module, "MAP_WINDOW_BYTES", width * itemsize * step * 3)  # several windows too
    torch_dtype = {"BF16": torch.bfloat16, "F16": torch.float16, "F32": torch.float32}[dtype]
    path = tmp_path / "m.safetensors"
    save_file({"w": torch.randn(301, width, generator=torch.Generator().manual_seed(0)).to(torch_dtype)}, str(path))
    info = read_header(path, path.name).tensors[0]
    out = np.asarray(leave_out) if leave_out is not None else None
    mean, count = rows_module.mean_of_rows(path, info, 301, width, trained, out)

    stored = np.frombuffer(path.read_bytes()[info.begin:info.end], {"BF16": "<u2", "F16": "<f2", "F32": "<f4"}[dtype])
    x = to_float32(stored.reshape(301, width)[:trained], dtype)
    keep = np.ones(trained, bool)
    if leave_out is not None:
        keep[[i for i in leave_out if i < trained]] = False
    total = np.zeros(width, np.float64)
    for lo in range(0, trained, step):
        total += np.add.reduce(x[lo:lo + step][keep[lo:lo + step]], axis=0)
    assert count == int(keep.sum())
    assert mean.tobytes() == (total / count).astype(np.float32).tobytes()
