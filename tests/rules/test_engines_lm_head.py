"""HVA960-HVA963: tie_word_embeddings against the saved lm_head, with transformers' behaviour decided by running it."""

from __future__ import annotations

import logging

import pytest
import torch
from builders import checkpoint, edit_json
from safetensors.torch import load_file, save_file

from hf_vocab_audit import audit
from hf_vocab_audit.facts.consumers import CONSUMERS, HeadUse


def codes(report, code):
    return [f for f in report.findings if f.code == code]


def _edit_tensors(folder, edit):
    path = folder / "model.safetensors"
    sd = load_file(path)
    edit(sd)
    save_file(sd, path, metadata={"format": "pt"})


def _load(folder, caplog):
    import transformers
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_warning()
    hf_logging.enable_propagation()
    try:
        with caplog.at_level(logging.WARNING):
            return transformers.AutoModelForCausalLM.from_pretrained(folder)
    finally:
        hf_logging.disable_propagation()


def test_untied_without_lm_head_fires_hva960_and_transformers_reinitialises_it(tmp_path, caplog):
    checkpoint(tmp_path, "llama", 104)
    _edit_tensors(tmp_path, lambda sd: sd.pop("lm_head.weight"))
    model = _load(tmp_path, caplog)  # what transformers does: a random head, reported as MISSING
    assert not torch.equal(model.lm_head.weight, model.model.embed_tokens.weight)
    assert abs(float(model.lm_head.weight.detach().std()) - model.config.initializer_range) < 0.005
    (f,) = codes(audit(tmp_path), "HVA960")
    assert f.severity.value == "error" and f.location.key == "tie_word_embeddings"
    assert "re-initialises lm_head at random" in f.message
    assert "vllm 0.10.2 refuses to load" in f.message and "mlx-lm 0.26.3 refuses to load" in f.message


def test_tied_with_different_lm_head_fires_hva961_and_hva962_as_transformers_unties(tmp_path, caplog):
    checkpoint(tmp_path, "llama", 104)
    edit_json(tmp_path / "config.json", tie_word_embeddings=True)
    _edit_tensors(tmp_path, lambda sd: sd.__setitem__("lm_head.weight", torch.randn(104, 16)))
    model = _load(tmp_path, caplog)
    saved = load_file(tmp_path / "model.safetensors")["lm_head.weight"]
    assert torch.equal(model.lm_head.weight, saved)  # transformers serves the saved head: it did not tie
    assert "will NOT tie them" in caplog.text
    report = audit(tmp_path)
    (f961,) = codes(report, "HVA961")
    assert f961.location.tensor == "lm_head.weight" and "vllm 0.10.2 uses the input embedding" in f961.message
    assert codes(report, "HVA962") == []  # only with --weights
    (f962,) = codes(audit(tmp_path, weights=True), "HVA962")
    assert f962.details["rows_differing"] == 104 and f962.severity.value == "error"


def test_tied_with_equal_lm_head_is_only_a_note_and_passes(tmp_path, caplog):
    checkpoint(tmp_path, "llama", 104)
    edit_json(tmp_path / "config.json", tie_word_embeddings=True)
    _edit_tensors(tmp_path, lambda sd: sd.__setitem__("lm_head.weight", sd["model.embed_tokens.weight"].clone()))
    model = _load(tmp_path, caplog)
    assert model.lm_head.weight is model.model.embed_tokens.weight  # transformers ties equal values
    report = audit(tmp_path, weights=True)
    assert len(codes(report, "HVA961")) == 1 and codes(report, "HVA962") == []
    assert codes(report, "HVA961")[0].severity.value == "info"  # older .bin saves hold both keys, equal
    assert report.exit_code("warning") == 0  # a healthy duplicate never fails even a strict gate


@pytest.mark.parametrize("tie", [False, True])
def test_healthy_layouts_are_quiet(tmp_path, tie):
    checkpoint(tmp_path, "llama", 104, model={"tie_word_embeddings": tie, "hidden_size": 64,
                                              "intermediate_size": 64})
    report = audit(tmp_path, weights=True)
    assert [f.code for f in report.findings if f.code.startswith("HVA96")] == []


def test_fresh_lm_head_under_a_trained_embedding_fires_hva963(tmp_path):
    checkpoint(tmp_path, "llama", 104, model={"hidden_size": 64, "intermediate_size": 64})
    gen = torch.Generator().manual_seed(1)

    def edit(sd):
        scale = torch.rand(104, 1, generator=gen) * 2 + 0.2  # rows of different norms, as training leaves them
        sd["model.embed_tokens.weight"] = torch.randn(104, 64, generator=gen) * scale
        sd["lm_head.weight"] = torch.randn(104, 64, generator=gen) * 0.02

    _edit_tensors(tmp_path, edit)
    (f,) = codes(audit(tmp_path, weights=True), "HVA963")
    assert f.location.tensor == "lm_head.weight" and f.details["initializer_range"] == 0.02


def test_trained_lm_head_is_quiet_for_hva963(tmp_path):
    checkpoint(tmp_path, "llama", 104, model={"hidden_size": 64, "intermediate_size": 64})
    gen = torch.Generator().manual_seed(2)

    def edit(sd):
        for key in ("model.embed_tokens.weight", "lm_head.weight"):
            sd[key] = torch.randn(104, 64, generator=gen) * (torch.rand(104, 1, generator=gen) * 2 + 0.2)

    _edit_tensors(tmp_path, edit)
    assert codes(audit(tmp_path, weights=True), "HVA963") == []


def test_consumer_table_names_a_version_and_source_for_every_entry():
    for consumer in CONSUMERS.values():
        assert consumer.version and consumer.source
    assert CONSUMERS["transformers"].executed and CONSUMERS["transformers"].untied_without_head is HeadUse.RANDOM_INIT
    assert CONSUMERS["vllm"].untied_without_head is HeadUse.REFUSES


@pytest.mark.parametrize("tie", [False, True])
def test_live_models_are_quiet_whatever_the_flag(tie):
    from builders import new_model, new_tokenizer

    report = audit(model=new_model("llama", 104, tie_word_embeddings=tie), tokenizer=new_tokenizer(104))
    assert [f.code for f in report.findings if f.code.startswith("HVA96")] == []
