"""The transformers route: .bin inputs, --method transformers, same old tensors as the surgical path."""

from __future__ import annotations

import torch
from builders import make_model, make_tokenizer
from transformers import AutoModelForCausalLM

from hf_vocab_audit.fix import fix_checkpoint

from .fixkit import ADDED, broken, state


def test_bin_checkpoint_is_loaded_safely_and_written_as_safetensors(tmp_path, guard_input):
    src = tmp_path / "m"
    make_model(src, "llama", 104, tie_word_embeddings=False)
    model = AutoModelForCausalLM.from_pretrained(src)
    (src / "model.safetensors").unlink()
    torch.save(model.state_dict(), src / "pytorch_model.bin")
    make_tokenizer(src, 104, added_special=ADDED)
    guard_input(src)

    report = fix_checkpoint(src, output=tmp_path / "out", verify_load="always")

    assert report.to_dict()["fix"]["method"] == "transformers"
    assert "the weights are not safetensors" in report.to_dict()["fix"]["notes"][0]
    assert report.facts["weights_format"] == "safetensors" and report.exit_code() == 0
    assert not (tmp_path / "out" / "pytorch_model.bin").exists()
    fixed = state(tmp_path / "out")
    old = model.state_dict()
    for name, value in fixed.items():
        assert torch.equal(value[: old[name].shape[0]], old[name]), name
    assert fixed["lm_head.weight"].shape == (106, 16)


def test_both_methods_keep_the_same_old_rows_and_parameters(tmp_path, guard_input):
    src = guard_input(broken(tmp_path / "m", dtype=torch.bfloat16, tie_word_embeddings=False))
    fix_checkpoint(src, output=tmp_path / "surgical")
    report = fix_checkpoint(src, output=tmp_path / "tf", method="transformers", mean_resizing=False)
    assert report.to_dict()["fix"]["method"] == "transformers"
    ours, theirs = state(tmp_path / "surgical"), state(tmp_path / "tf")
    assert ours.keys() == theirs.keys()
    for name in ours:
        assert ours[name].shape == theirs[name].shape and ours[name].dtype == theirs[name].dtype, name
        assert torch.equal(ours[name][:104], theirs[name][:104]), name
