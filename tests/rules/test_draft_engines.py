"""HVA855: the serving engines' own vocabulary checks of a speculative-decoding draft (``check TARGET --draft``).

The engines do not run here: the expected verdicts follow their source at the versions cited in
``facts/consumers.py``. llama.cpp (vendored by llama-cpp-python 0.3.36, ``common/speculative.cpp``
``common_speculative_are_compatible``) refuses when the add-bos flags differ, when the sizes are more than
``SPEC_VOCAB_MAX_SIZE_DIFFERENCE`` = 128 apart, or when a token text differs at an id from
``SPEC_VOCAB_CHECK_START_TOKEN_ID`` = 5; vLLM 0.10.2 and SGLang 0.4.10 compare nothing. transformers' assisted
generation, run on CPU, shows what the same pairs do there (it compares ``vocab_size`` alone)."""

from __future__ import annotations

import pytest
import torch
from builders import edit_json, make_model, make_tokenizer, new_tokenizer

from hf_vocab_audit import audit
from hf_vocab_audit.facts.consumers import CONSUMERS

IDS = torch.tensor([[1, 5, 6, 7]])
BOS_TEMPLATE = {"type": "TemplateProcessing",
                "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
                "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}}
BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}


@pytest.fixture(scope="module")
def target(tmp_path_factory):
    folder = tmp_path_factory.mktemp("target")
    make_model(folder, "llama", 104)
    make_tokenizer(folder, 104)
    return folder


def draft(folder, rows=104, **tokenizer):
    make_model(folder, "llama", rows, seed=1)
    make_tokenizer(folder, 104, **tokenizer)  # the target's tokenizer; the config may pad past it
    return folder


def engine_hits(target, other):
    report = audit(target, draft=str(other))
    assert "HVA855" in report.rules_run
    return {f.code: f for f in report.findings if f.code.startswith("HVA85")}, \
        [f for f in report.findings if f.code == "HVA855"]


def generate(target, other):
    from transformers import LlamaForCausalLM

    model = LlamaForCausalLM.from_pretrained(target).eval()
    assistant = LlamaForCausalLM.from_pretrained(other).eval()
    return model.generate(IDS, assistant_model=assistant, max_new_tokens=4, do_sample=False)


def test_the_engines_read_are_llama_cpp_vllm_and_sglang():
    rules = {name: c.draft_vocab for name, c in CONSUMERS.items() if c.draft_vocab is not None}
    assert set(rules) == {"llama.cpp", "vllm", "sglang"}
    assert rules["llama.cpp"].max_size_difference == 128 and rules["llama.cpp"].compare_from == 5
    assert not rules["vllm"].checks and not rules["sglang"].checks  # they compare nothing: no refusal


def test_a_same_tokenizer_draft_is_quiet(target, tmp_path):
    other = draft(tmp_path / "draft")
    generate(target, other)
    found, hits = engine_hits(target, other)
    assert hits == [] and found == {}


def test_a_draft_padded_within_128_rows_is_accepted_by_llama_cpp(target, tmp_path):
    other = draft(tmp_path / "draft", rows=104 + 128)  # a same-family draft padded otherwise (152064 vs 151936)
    with pytest.raises(ValueError, match="different tokenizers"):  # transformers compares vocab_size alone
        generate(target, other)
    found, hits = engine_hits(target, other)
    assert hits == [] and "HVA850" in found


def test_sizes_more_than_128_apart_are_refused_by_llama_cpp(target, tmp_path):
    other = draft(tmp_path / "draft", rows=104 + 129)
    _found, hits = engine_hits(target, other)
    assert len(hits) == 1
    hit = hits[0]
    assert hit.severity.value == "warning" and hit.location.file == "config.json" and hit.location.key == "vocab_size"
    assert hit.details["engine"] == "llama.cpp" and hit.details["check"] == "size"
    assert hit.details["said"] == ("draft model vocab must closely match target model to use speculation but target "
                                   "vocab size 104 does not match draft vocab size 233 - difference 129, max allowed 128")
    assert hit.details["draft"] == str(other) and hit.details["draft_file"] == "config.json"
    assert "runtime_error" in hit.message and "common/speculative.cpp" in hit.details["source"]


def _swapped(folder, edit):
    make_model(folder, "llama", 104, seed=1)
    new_tokenizer(104, vocab_edit=edit).save_pretrained(folder)
    return folder


def test_a_token_differing_from_id_5_is_refused_by_llama_cpp(target, tmp_path):
    other = _swapped(tmp_path / "draft", {"w0": 103, "w99": 4})  # ids 4 and 103 swapped
    generate(target, other)  # transformers: same vocab_size, accepted without a word
    found, hits = engine_hits(target, other)
    assert "HVA851" in found and len(hits) == 1
    hit = hits[0]
    assert hit.details["check"] == "tokens" and hit.location.file == "tokenizer.json"
    assert hit.location.token_id == 103 and hit.location.token == "w99"  # id 4 is below the first id compared
    assert hit.details["said"] == ("draft model vocab must match target model to use speculation but token 103 "
                                   "content differs - target 'w99', draft 'w0'")


def test_tokens_differing_below_id_5_pass_llama_cpp(target, tmp_path):
    other = _swapped(tmp_path / "draft", {"w0": 3, "<pad>": 4})  # ids 3 and 4 swapped: not compared
    found, hits = engine_hits(target, other)
    assert "HVA851" in found and hits == []


def test_an_id_only_the_target_holds_is_a_pad_filler_in_the_draft(tmp_path):
    target = tmp_path / "target"
    make_model(target, "llama", 112)
    make_tokenizer(target, 104, added=["<extra>"])  # id 104 in the target; the draft's converter writes [PAD104]
    other = draft(tmp_path / "draft", rows=112)
    _found, hits = engine_hits(target, other)
    assert [h.details["said"] for h in hits] == [
        "draft model vocab must match target model to use speculation but token 104 content differs - "
        "target '<extra>', draft '[PAD104]'"]


def test_another_bos_handling_is_refused_by_llama_cpp(tmp_path):
    target = tmp_path / "target"
    make_model(target, "llama", 104)
    make_tokenizer(target, 104)
    edit_json(target / "tokenizer.json", post_processor=BOS_TEMPLATE)  # adds <s> (id 1)
    other = draft(tmp_path / "draft")
    edit_json(other / "tokenizer.json", post_processor={"type": "Sequence", "processors": [BYTE_LEVEL]})  # adds none
    _found, hits = engine_hits(target, other)
    assert len(hits) == 1 and hits[0].details["check"] == "add_bos"
    assert hits[0].details["said"] == ("draft model bos tokens must match target model to use speculation. "
                                       "add: 1 - 0, id: 1 - 1)")
    edit_json(other / "tokenizer.json", post_processor=BOS_TEMPLATE)  # now the same: accepted
    assert engine_hits(target, other)[1] == []


def test_an_eagle3_draft_is_not_held_to_llama_cpps_plain_draft_check(target, tmp_path):
    """llama.cpp checks the vocabularies in its draft-simple speculation (a plain ``--model-draft``); its
    draft-eagle3 path does not call ``common_speculative_are_compatible``: the EAGLE-3 rules (HVA853/854) apply."""
    import json

    from safetensors.torch import save_file

    other = tmp_path / "eagle"
    other.mkdir()
    (other / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "vocab_size": 104 + 200,
        "draft_vocab_size": 32, "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2}))
    save_file({"d2t": torch.zeros(32, dtype=torch.int64), "t2d": torch.zeros(104, dtype=torch.bool),
               "midlayer.hidden_norm.weight": torch.ones(16)}, other / "model.safetensors")
    found, hits = engine_hits(target, other)
    assert hits == [] and "HVA850" in found  # the size still differs for transformers
    plain = draft(tmp_path / "plain", rows=104 + 200)
    assert [h.details["check"] for h in engine_hits(target, plain)[1]] == ["size"]
