"""HVA106: vocabulary-sized biases against the rows; what from_pretrained does decides the verdict."""

from __future__ import annotations

import pytest
import torch
from builders import checkpoint
from safetensors.torch import load_file, save_file

from hf_vocab_audit import audit
from hf_vocab_audit.fix import fix_checkpoint

CASES = [  # (kind, bias tensor, transformers class)
    ("bart", "final_logits_bias", "BartForConditionalGeneration"),
    ("bert", "cls.predictions.bias", "BertForMaskedLM"),
    ("roberta", "lm_head.bias", "RobertaForMaskedLM"),
]


def loads(folder, cls: str) -> bool:
    import transformers

    try:
        getattr(transformers, cls).from_pretrained(folder)
    except RuntimeError as exc:
        assert "ignore_mismatched_sizes" in str(exc)
        return False
    return True


def set_bias_length(folder, name: str, length: int) -> None:
    state = load_file(folder / "model.safetensors")
    bias = state[name]
    if length <= bias.shape[-1]:
        state[name] = bias[..., :length].clone()
    else:
        state[name] = torch.cat([bias, torch.zeros(*bias.shape[:-1], length - bias.shape[-1])], dim=-1)
    save_file(state, folder / "model.safetensors", metadata={"format": "pt"})


@pytest.mark.parametrize(("kind", "name", "cls"), CASES)
def test_short_bias_fires_and_fix_grows_it(tmp_path, kind, name, cls):
    folder = checkpoint(tmp_path / "m", kind, 104)
    set_bias_length(folder, name, 100)
    assert not loads(folder, cls)
    (f,) = [f for f in audit(folder).findings if f.code == "HVA106"]
    assert f.severity.value == "error" and f.location.tensor == name
    assert f.message == (f"{name} has 100 entries but the vocabulary has 104 rows: from_pretrained fails with a "
                         "size mismatch")
    report = fix_checkpoint(folder, output=tmp_path / "fixed")
    assert not [g for g in report.findings if g.code == "HVA106"]
    assert loads(tmp_path / "fixed", cls)
    old, new = load_file(folder / "model.safetensors")[name], load_file(tmp_path / "fixed" / "model.safetensors")[name]
    assert new.shape[-1] == 104 and torch.equal(new[..., :100], old)


@pytest.mark.parametrize(("kind", "name", "cls"), CASES)
def test_quiet_on_healthy(tmp_path, kind, name, cls):
    folder = checkpoint(tmp_path / "m", kind, 104)
    assert loads(folder, cls)
    assert not [f for f in audit(folder).findings if f.code == "HVA106"]


def test_long_bias_fires_without_a_fix(tmp_path):
    folder = checkpoint(tmp_path / "m", "bart", 104)
    set_bias_length(folder, "final_logits_bias", 108)
    assert not loads(folder, "BartForConditionalGeneration")
    (f,) = [f for f in audit(folder).findings if f.code == "HVA106"]
    assert f.fix is None and "108 entries" in f.message and "longer than the embeddings" in f.hint
