"""The guard's building blocks: live limits (ZeRO-3, wrappers), hooks, the error, evidence, packed batches."""

from __future__ import annotations

import dataclasses
import pickle

import pytest
import torch
import transformers
from torch.overrides import TorchFunctionMode

import hf_vocab_audit as hva
from hf_vocab_audit.guard import check_batch, limits_of
from hf_vocab_audit.repro import replay


def test_limits_come_from_the_modules_not_the_config(load_model):
    model = load_model("llama")
    model.config.vocab_size = 50_000  # a stale config does not move the limit
    try:
        assert limits_of(model).input_rows == 104
    finally:
        model.config.vocab_size = 104


def test_zero3_placeholder_parameters_use_ds_shape(guard_ckpts):
    """Under ZeRO-3 a parameter is an empty placeholder; its real shape is ds_shape (transformers #25977)."""
    model = transformers.AutoModelForCausalLM.from_pretrained(guard_ckpts["llama"])
    emb = model.get_input_embeddings()
    emb.weight = torch.nn.Parameter(torch.empty(0))
    emb.weight.ds_shape = torch.Size([96, 16])  # type: ignore[attr-defined]
    emb.num_embeddings = 104  # the module attribute can disagree with the partitioned weight
    limits = limits_of(model)
    assert limits.input_rows == 96
    assert check_batch({"input_ids": torch.tensor([[95]])}, limits) == []
    assert check_batch({"input_ids": torch.tensor([[96]])}, limits)[0].code == "HVA501"


def test_wrappers_are_unwrapped(load_model):
    model = load_model("bert")
    wrapped = torch.nn.DataParallel(model)
    assert limits_of(wrapped) == limits_of(model)


def test_learned_position_limits(load_model):
    assert limits_of(load_model("bert")).usable_positions == 64
    roberta = limits_of(load_model("roberta"))
    assert (roberta.position_rows, roberta.padding_idx, roberta.usable_positions, roberta.position_id_limit) == (
        66, 1, 64, 66)
    bart = limits_of(load_model("bart"))
    assert (bart.position_rows, bart.usable_positions, bart.position_id_limit) == (66, 64, 64)
    assert limits_of(load_model("llama")).usable_positions is None  # rotary: nothing to check
    assert limits_of(load_model("llama-cls")).num_labels == 3


def test_hooks_raise_before_the_forward_and_are_removed(load_model, tmp_path):
    model = load_model("llama")
    g = hva.guard(model, evidence_dir=False)
    bad = torch.tensor([[5, 6, 104]])
    with g.hooks(), pytest.raises(hva.BatchIndexError, match=r"input_ids\[0, 2\] = 104"):
        model(bad)  # positional input_ids are checked too
    with g.hooks():
        model(input_ids=torch.tensor([[5, 6, 103]]))
    with pytest.raises(IndexError) as plain:
        model(input_ids=bad)
    assert not isinstance(plain.value, hva.BatchIndexError)  # the hook is gone


def test_error_is_constructible_from_one_string_and_pickles(load_model):
    g = hva.guard(load_model("llama"), evidence_dir=False)
    with pytest.raises(hva.BatchIndexError) as caught:
        g.check({"input_ids": torch.tensor([[1, 2], [3, -100]])}, batch_number=7)
    err = caught.value
    again = hva.BatchIndexError(f"Caught BatchIndexError in DataLoader worker process 0.\nOriginal {err}")
    back = pickle.loads(pickle.dumps(err))
    for e in (again, back):
        assert (e.code, e.key, e.row, e.position, e.value, e.batch) == ("HVA502", "input_ids", 1, 1, -100, 7)
    assert hva.BatchIndexError("plain text").code is None


def test_class_label_causes(load_model):
    limits = limits_of(load_model("llama-cls"))
    assert check_batch({"labels": torch.tensor([1, 2, 3])}, limits)[0].code == "HVA511"  # 1-based
    assert check_batch({"labels": torch.tensor([0, -1, 2])}, limits)[0].code == "HVA512"
    assert check_batch({"labels": torch.tensor([0, 7])}, limits)[0].code == "HVA510"


def test_lm_labels_padded_with_an_unresized_pad_id(load_model):
    limits = dataclasses.replace(limits_of(load_model("llama")), pad_token_id=104, pad_token="<pad>")
    v = check_batch({"labels": torch.tensor([[5, 6, 104, 104]])}, limits)[0]
    assert (v.code, v.count, v.position) == ("HVA520", 2, 2) and "padded with the pad id" in v.cause
    assert v.message.startswith("labels[0, 2] = 104 >= the 104 output-projection rows")


def test_float_ids_are_reported_and_fail_the_forward(load_model):
    model = load_model("bert")
    batch = {"input_ids": torch.tensor([[5.0, 6.0]])}
    assert check_batch(batch, limits_of(model))[0].code == "HVA530"
    assert replay(model, batch).exc_type == "RuntimeError"


def test_attention_mask_values_are_checked_under_flash_attention_only(load_model):
    sdpa = limits_of(load_model("llama"))
    flash = dataclasses.replace(sdpa, attn_implementation="flash_attention_2")
    batch = {"input_ids": torch.tensor([[5, 6, 7]]), "attention_mask": torch.tensor([[1, 2, 1]])}
    assert check_batch(batch, sdpa) == []
    assert check_batch(batch, flash)[0].code == "HVA540"
    assert check_batch({**batch, "attention_mask": torch.tensor([[1, 1, 0]])}, flash) == []


def test_packed_cu_seq_lens(guard_ckpts, load_model):
    tok = transformers.AutoTokenizer.from_pretrained(guard_ckpts["llama"])
    collate = transformers.DataCollatorWithFlattening(return_flash_attn_kwargs=True)
    batch = collate([dict(tok("w1 w2 w3")), dict(tok("w4 w5"))])
    limits = dataclasses.replace(limits_of(load_model("llama")), attn_implementation="flash_attention_2")
    assert "cu_seq_lens_q" in batch and check_batch(batch, limits) == []
    broken = {**batch, "cu_seq_lens_q": batch["cu_seq_lens_q"] + torch.tensor([0, 0, 1], dtype=torch.int32)}
    assert check_batch(broken, limits)[0].code == "HVA541"
    backwards = {**batch, "cu_seq_lens_k": torch.tensor([0, 4, 3], dtype=torch.int32)}
    assert "decreases" in check_batch(backwards, limits)[0].message


class CountOps(TorchFunctionMode):
    """Counts every torch function call, by name: reductions and host reads (item, tolist, bool)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.calls.append(getattr(func, "__name__", str(func)))
        return func(*args, **(kwargs or {}))


def test_host_mode_adds_no_device_work(load_model, guard_ckpts):
    """Tensors not on the host (meta stands in for a GPU) are not touched: no reduction, no sync."""
    tok = transformers.AutoTokenizer.from_pretrained(guard_ckpts["llama"])
    g = hva.guard(load_model("llama"), tok, evidence_dir=False)
    ids = torch.randint(0, 104, (8, 2048))
    on_device = {"input_ids": ids.to("meta"), "labels": ids.to("meta"), "attention_mask": ids.to("meta")}
    collate = g.wrap(lambda _features: on_device)
    with CountOps() as ops:
        collate([])
    assert set(ops.calls) <= {"numel", "__get__"}, ops.calls  # shape and device reads only
    on_host = {"input_ids": ids, "labels": ids, "attention_mask": torch.ones_like(ids)}
    with CountOps() as ops:
        g.wrap(lambda _features: on_host)([])
    # One numpy view per checked tensor (the mask is not checked under SDPA), no torch reduction.
    assert ops.calls.count("numpy") == 2
    assert not {"aminmax", "min", "max", "item", "tolist", "nonzero", "sum"} & set(ops.calls)


def test_importing_the_guard_does_not_import_torch():
    import subprocess
    import sys

    code = ("import sys, hf_vocab_audit as hva\nfrom hf_vocab_audit.guard import BatchIndexError\n"
            "assert callable(hva.guard) and callable(hva.guard_trainer)\n"
            "bad = [m for m in ('torch', 'transformers') if m in sys.modules]\nassert not bad, bad\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_first_label_of_a_causal_lm_is_skipped_when_locating(load_model):
    limits = limits_of(load_model("llama"))
    v = check_batch({"labels": torch.tensor([[104, 5, 6, 200, -100]])}, limits)[0]
    assert (v.position, v.value, v.count) == (3, 200, 1)
    assert check_batch({"labels": torch.tensor([[104, 5, 6, 7]])}, limits) == []


def test_float_class_labels_are_not_indices(guard_ckpts):
    # A fresh model: the forward records problem_type="multi_label_classification" in its config.
    model = transformers.AutoModelForSequenceClassification.from_pretrained(guard_ckpts["llama-cls"]).eval()
    batch = {"input_ids": torch.tensor([[5, 6], [7, 8]]), "labels": torch.tensor([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])}
    assert check_batch(batch, limits_of(model)) == []
    assert replay(model, batch).exc_type is None  # transformers treats them as multi-label targets


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8])
@pytest.mark.parametrize("allow", [None, -100])
@pytest.mark.parametrize("host", [True, False])
def test_range_proof_matches_a_plain_oracle(dtype, allow, host):
    """The unsigned-max proof (host) and the aminmax proof (device path) agree with a per-value check."""
    from hf_vocab_audit.guard.checks import _in_range

    g = torch.Generator().manual_seed(0)
    edges = [0, 1, 99, 100, 101, 127, -1, -99, -100, -101, -128]
    for _trial in range(300):
        values = torch.randint(0, 100, (int(torch.randint(1, 12, (1,), generator=g)),), generator=g)
        for _ in range(int(torch.randint(0, 3, (1,), generator=g))):
            values[int(torch.randint(0, len(values), (1,), generator=g))] = edges[
                int(torch.randint(0, len(edges), (1,), generator=g))]
        if dtype == torch.uint8:
            values = values.clamp(min=0)
        t = values.to(dtype)
        expected = all(0 <= int(v) < 100 or (allow is not None and int(v) == allow) for v in t)
        assert _in_range(t, 100, allow, host=host) == expected, (t.tolist(), allow)


def test_ids_the_architecture_replaces_before_the_lookup_are_not_errors(load_model):
    """Gemma-3 / PaliGemma multimodal classes swap an out-of-vocabulary image id for 0 before the lookup."""
    limits = dataclasses.replace(limits_of(load_model("llama")), replaced_ids=(262144,))
    assert check_batch({"input_ids": torch.tensor([[5, 262144, 262144, 7]])}, limits) == []
    v = check_batch({"input_ids": torch.tensor([[5, 262144, 104, 7]])}, limits)[0]
    assert (v.position, v.value, v.count) == (2, 104, 1)
    assert limits_of(load_model("llama")).replaced_ids == ()


def test_gemma3_image_id_is_read_from_the_multimodal_config():
    from hf_vocab_audit.guard.limits import _replaced_ids

    config = transformers.Gemma3Config()
    assert _replaced_ids(config, "gemma3", "Gemma3ForConditionalGeneration") == (config.image_token_id,)
    assert _replaced_ids(config, "gemma3", "Gemma3ForCausalLM") == ()
