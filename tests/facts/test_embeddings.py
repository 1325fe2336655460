"""The input/output embedding tensors we pick agree with transformers' get_*_embeddings()."""

from __future__ import annotations

import pytest
import torch
import transformers
from builders import ARCHS, build_config, make_model

from hf_vocab_audit.facts import gather


def _aliases(model, param):
    return {name for name, p in model.named_parameters(remove_duplicate=False) if p is param}


@pytest.mark.parametrize("kind", sorted(ARCHS))
def test_matches_meta_skeleton(tmp_path, kind):
    make_model(tmp_path, kind, 104)
    with torch.device("meta"):
        model = getattr(transformers, ARCHS[kind][1])(build_config(kind, 104))
    emb = gather(tmp_path).embeddings
    expected_in = model.get_input_embeddings().weight
    assert emb.input.name in _aliases(model, expected_in)
    assert emb.input_rows == expected_in.shape[0]
    out_module = model.get_output_embeddings()
    if out_module is None:
        assert emb.output is None
        return
    if out_module.weight is expected_in:
        assert emb.tied and emb.output is None
        assert emb.output_rows == expected_in.shape[0]
    else:
        assert not emb.tied
        assert emb.output.name in _aliases(model, out_module.weight)


def test_untied_config_on_tied_by_default_family(tmp_path):
    make_model(tmp_path, "gpt2", 104, tie_word_embeddings=False)
    emb = gather(tmp_path).embeddings
    assert not emb.tied and emb.output.name == "lm_head.weight"


def test_unknown_architecture_falls_back_to_largest_embedding(tmp_path):
    import json

    import numpy as np
    from safetensors.numpy import save_file

    (tmp_path / "config.json").write_text(json.dumps({"model_type": "my-own", "vocab_size": 50}))
    save_file({"net.tok_embed.weight": np.zeros((50, 4), np.float32),
               "net.pos_embed.weight": np.zeros((8, 4), np.float32),
               "net.position_embedding.weight": np.zeros((99, 4), np.float32)}, str(tmp_path / "model.safetensors"))
    emb = gather(tmp_path).embeddings
    assert emb.input.name == "net.tok_embed.weight"


def test_sharded_checkpoint_headers(tmp_path):
    model = transformers.LlamaForCausalLM(build_config("llama", 104))
    model.save_pretrained(tmp_path, max_shard_size="20KB")
    facts = gather(tmp_path)
    assert len(facts.tensors.files) > 1 and facts.tensors.index_file == "model.safetensors.index.json"
    assert facts.embeddings.input.name == "model.embed_tokens.weight"
    assert set(facts.tensors.tensors) == set(model.state_dict())
