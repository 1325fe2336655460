"""HVA0xx: refused pickles and remote-code references."""

from __future__ import annotations

import torch
from builders import checkpoint, edit_json, make_tokenizer

from hf_vocab_audit import audit


class Payload:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def test_hva001_malicious_pickle_is_reported_never_run(tmp_path):
    make_tokenizer(tmp_path, 104)
    edit_json(tmp_path / "config.json", model_type="llama", architectures=["LlamaForCausalLM"], vocab_size=104)
    marker = tmp_path / "pwned"
    torch.save({"model.embed_tokens.weight": torch.zeros(104, 4), "x": Payload(marker)}, tmp_path / "pytorch_model.bin")
    report = audit(tmp_path)
    assert not marker.exists()
    (f,) = [f for f in report.findings if f.code == "HVA001"]
    assert f.location.file == "pytorch_model.bin" and "weights_only" in f.message
    assert report.exit_code() == 1


def test_bin_checkpoint_read_with_weights_only(tmp_path):
    from builders import build_config
    from transformers import LlamaForCausalLM

    model = LlamaForCausalLM(build_config("llama", 104))
    model.config.save_pretrained(tmp_path)
    torch.save(model.state_dict(), tmp_path / "pytorch_model.bin")
    make_tokenizer(tmp_path, 104)
    report = audit(tmp_path)
    assert report.facts["weights_format"] == "bin"
    assert report.facts["input_embedding"]["shape"] == [104, 16]
    assert report.findings == ()


def test_hva002_auto_map_reported_not_imported(tmp_path):
    checkpoint(tmp_path, "llama", 104)
    edit_json(tmp_path / "config.json", auto_map={"AutoModelForCausalLM": "modeling_evil.EvilModel"})
    (tmp_path / "modeling_evil.py").write_text("raise SystemExit('executed!')\n")
    (f,) = [f for f in audit(tmp_path).findings if f.code == "HVA002"]
    assert "AutoModelForCausalLM=modeling_evil.EvilModel" in f.message
