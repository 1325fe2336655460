"""HVA85x: a target against its speculative-decoding draft (``check TARGET --draft DRAFT``). Target and draft
are tiny Llamas made with transformers' own classes; assisted generation (``generate(assistant_model=...)``)
on CPU shows what each mismatch does, and torch's indexing what an EAGLE-3 map past the target does."""

from __future__ import annotations

import json

import pytest
import torch
from builders import edit_json, make_model, make_tokenizer
from safetensors.torch import save_file

from hf_vocab_audit import audit

IDS = torch.tensor([[1, 5, 6, 7]])


@pytest.fixture(scope="module")
def target(tmp_path_factory):
    folder = tmp_path_factory.mktemp("target")
    make_model(folder, "llama", 104)
    make_tokenizer(folder, 104)
    return folder


def draft(folder, rows=104, **tokenizer):
    make_model(folder, "llama", rows, seed=1)
    make_tokenizer(folder, rows, **tokenizer)
    return folder


def eagle(folder, d2t, t2d_len=104, draft_vocab_size=None):
    """An EAGLE-3 style draft: its config names ``draft_vocab_size``, its weights hold ``d2t`` and ``t2d``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "vocab_size": 104,
        "draft_vocab_size": len(d2t) if draft_vocab_size is None else draft_vocab_size, "hidden_size": 16,
        "num_hidden_layers": 1, "num_attention_heads": 2, "bos_token_id": 1, "eos_token_id": 2}))
    save_file({"d2t": torch.tensor(d2t, dtype=torch.int64), "t2d": torch.zeros(t2d_len, dtype=torch.bool),
               "midlayer.hidden_norm.weight": torch.ones(16)}, folder / "model.safetensors")
    return folder


def codes(target, other, **kwargs):
    report = audit(target, draft=str(other), **kwargs)
    return report, {f.code: f for f in report.findings if f.code.startswith("HVA85")}


def generate(target, other):
    from transformers import LlamaForCausalLM

    model = LlamaForCausalLM.from_pretrained(target).eval()
    assistant = LlamaForCausalLM.from_pretrained(other).eval()
    return model.generate(IDS, assistant_model=assistant, max_new_tokens=4, do_sample=False)


def test_a_draft_of_the_same_vocabulary_is_quiet(target, tmp_path):
    from transformers import LlamaForCausalLM

    other = draft(tmp_path / "draft")
    plain = LlamaForCausalLM.from_pretrained(target).eval().generate(IDS, max_new_tokens=4, do_sample=False)
    assert torch.equal(generate(target, other), plain)
    report, found = codes(target, other)
    assert found == {} and {"HVA850", "HVA851", "HVA852", "HVA853", "HVA854"} <= set(report.rules_run)


def test_another_vocab_size_is_refused_by_assisted_generation(target, tmp_path):
    other = draft(tmp_path / "draft", rows=120)
    with pytest.raises(ValueError, match="different tokenizers"):
        generate(target, other)
    _report, found = codes(target, other)
    hit = found["HVA850"]
    assert hit.severity.value == "warning" and hit.location.file == "config.json"
    assert hit.details == {"vocab_size": 104, "draft_vocab_size": 120, "draft": str(other), "draft_file": "config.json"}


def test_tokens_at_other_ids_pass_transformers_silently(target, tmp_path):
    other = tmp_path / "draft"
    make_model(other, "llama", 104, seed=1)
    from builders import new_tokenizer

    tok = new_tokenizer(104, vocab_edit={"w0": 103, "w99": 4})  # two words swapped
    tok.save_pretrained(other)
    generate(target, other)  # same vocab_size: accepted without a word
    _report, found = codes(target, other)
    hit = found["HVA851"]
    assert hit.severity.value == "warning" and hit.details["count"] == 2 and hit.details["compared"] == 104
    assert hit.details["tokens"][0] == {"id": 4, "target": "w0", "draft": "w99"}


def test_another_eos_in_the_draft(target, tmp_path):
    other = draft(tmp_path / "draft")
    edit_json(other / "generation_config.json", eos_token_id=9)
    _report, found = codes(target, other)
    hit = found["HVA852"]
    assert hit.severity.value == "warning" and hit.location.file == "generation_config.json"
    assert hit.details["ids"] == [2] and hit.details["draft_ids"] == [9]


def test_an_eagle_map_past_the_target(target, tmp_path):
    d2t = [0] * 32
    d2t[31] = 80  # draft id 31 -> target id 111, past 104 rows
    other = eagle(tmp_path / "eagle", d2t)
    logits = torch.zeros(104)
    with pytest.raises(IndexError):  # what an engine does with it: index the target's vocabulary
        logits[torch.tensor(31) + torch.tensor(d2t)[31]]
    _report, found = codes(target, other)
    hit = found["HVA853"]
    assert hit.severity.value == "error" and hit.details["maps"] == [[31, 111]]
    assert hit.details["draft_file"] == "model.safetensors" and hit.details["draft_tensor"] == "d2t"
    assert "HVA854" not in found


def test_an_eagle_map_of_other_lengths(target, tmp_path):
    other = eagle(tmp_path / "eagle", [0] * 32, t2d_len=100, draft_vocab_size=40)
    _report, found = codes(target, other)
    messages = [f.message for f in audit(target, draft=str(other)).findings if f.code == "HVA854"]
    assert found["HVA854"].severity.value == "error" and len(messages) == 2
    assert any("32 entries; its draft_vocab_size is 40" in m for m in messages)
    assert any("100 entries; the target has 104 rows" in m for m in messages)


def test_a_healthy_eagle_draft_is_quiet(target, tmp_path):
    other = eagle(tmp_path / "eagle", list(range(32)))  # draft id i -> target id 2i
    _report, found = codes(target, other)
    assert found == {}


@pytest.mark.parametrize("make", ["missing", "empty"])
def test_a_bad_draft_is_one_line_exit_2(target, tmp_path, run_cli, make):
    other = tmp_path / "other"
    if make == "empty":
        other.mkdir()
    code, out, err = run_cli("check", target, "--draft", other)
    lines = (out + err).strip().splitlines()
    assert code == 2 and len(lines) == 1 and "--draft" in lines[0] and "other" in lines[0]
