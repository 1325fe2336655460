"""HVA966-HVA967: the chat template as vLLM serves it (rendered in the budgeted sandbox), against its stop ids."""

from __future__ import annotations

import json

from builders import CHATML, checkpoint, edit_json

from hf_vocab_audit import audit
from hf_vocab_audit.facts.consumers import serving_stop_ids
from hf_vocab_audit.rules.serving_chat import ANSWER, USER, turn_end


def codes(report, code):
    return [f for f in report.findings if f.code == code]


def chatml(folder):
    """A ChatML model whose eos is </s> (id 2): the classic base-to-chat fine-tune, <|im_end|> at id 105."""
    return checkpoint(folder, "llama", 106, tokenizer_vocab=104, added_special=["<|im_start|>", "<|im_end|>"],
                      chat_template=CHATML)


def test_turn_end_matches_what_transformers_renders(tmp_path):
    import transformers

    folder = chatml(tmp_path / "m")
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    text = tok.apply_chat_template([{"role": "user", "content": USER}, {"role": "assistant", "content": ANSWER}],
                                   tokenize=False)
    report = audit(folder, target_kind="vllm")
    (f,) = codes(report, "HVA967")
    assert text.split(ANSWER, 1)[1].startswith(f.details["turn_end_token"])  # the sandbox rendered the same
    assert f.details["turn_end_id"] == tok.convert_tokens_to_ids("<|im_end|>") == 105
    assert f.details["stop_ids"] == [2] and f.severity.value == "error"
    assert "'<|im_end|>' (id 105)" in f.message and "generation_config.json eos_token_id" in f.message
    assert f.location.file == "generation_config.json" and f.location.key == "eos_token_id"


def test_turn_end_among_generation_config_eos_is_quiet(tmp_path):
    folder = chatml(tmp_path / "m")
    edit_json(folder / "generation_config.json", eos_token_id=[2, 105])
    report = audit(folder, target_kind="vllm")
    assert codes(report, "HVA967") == [] and codes(report, "HVA966") == []


def test_template_closing_with_eos_token_is_quiet(tmp_path):
    template = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}{% if m['role'] == 'assistant' %}" \
               "{{ eos_token }}{% endif %}\n{% endfor %}{% if add_generation_prompt %}assistant: {% endif %}"
    folder = checkpoint(tmp_path / "m", "llama", 104, chat_template=template)
    report = audit(folder, target_kind="vllm")
    assert codes(report, "HVA967") == [] and codes(report, "HVA966") == []


def test_no_target_no_finding(tmp_path):
    assert codes(audit(chatml(tmp_path / "m")), "HVA967") == []


def test_template_that_raises_fires_hva966(tmp_path):
    folder = checkpoint(tmp_path / "m", "llama", 104,
                        chat_template="{{ raise_exception('Conversation roles must alternate') }}")
    (f,) = codes(audit(folder, target_kind="vllm"), "HVA966")
    assert "Conversation roles must alternate" in f.message


def test_template_past_its_budget_fires_hva966_without_doing_the_work(tmp_path):
    folder = checkpoint(tmp_path / "m", "llama", 104, chat_template="{{ 'a' * 10**12 }}")
    (f,) = codes(audit(folder, target_kind="vllm"), "HVA966")
    assert f.details["error"]


def test_processor_template_no_processor_reads_fires_hva966(tmp_path):
    folder = checkpoint(tmp_path / "m", "llama", 104)
    (folder / "chat_template.json").write_text(json.dumps({"chat_template": CHATML}))
    facts_end = codes(audit(folder, target_kind="vllm"), "HVA966")
    assert [f.location.file for f in facts_end] == ["chat_template.json"]


def test_base_model_without_template_is_quiet(tmp_path):
    report = audit(checkpoint(tmp_path / "m", "llama", 104), target_kind="vllm")
    assert codes(report, "HVA966") == [] and codes(report, "HVA967") == []


def test_stop_ids_fall_back_to_config_without_generation_config(tmp_path):
    from hf_vocab_audit.core.options import AuditOptions
    from hf_vocab_audit.facts.sources.registry import resolve_source

    folder = chatml(tmp_path / "m")
    (folder / "generation_config.json").unlink()
    facts = resolve_source(folder, remote=False).gather(AuditOptions())
    assert serving_stop_ids(facts) == {2: "the tokenizer's eos_token '</s>' and config.json eos_token_id"}
    assert turn_end(facts).token == "<|im_end|>"
