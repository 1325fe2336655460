"""HVA556 (content the chat template drops) and HVA557 (double BOS): each verdict is decided by rendering with
transformers' ``apply_chat_template`` and by TRL's own dataset preparation, over real public templates (the
Qwen3 and Llama-3/3.1 templates TRL ships for identity comparison)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from builders import checkpoint
from chat_builders import CHATML, MARKERS, chat_checkpoint, trl_outcome, trl_template
from dataset_builders import write_jsonl

from hf_vocab_audit import audit

pytest.importorskip("trl")

LLAMA_MARKERS = ["<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>", "<|eom_id|>", "<|python_tag|>"]


def U(text):  # noqa: N802 - a turn
    return {"role": "user", "content": text}


def A(text, **fields):  # noqa: N802
    return {"role": "assistant", "content": text, **fields}


def CALL(name, **arguments):  # noqa: N802
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


def _model(root: Path, name: str, template: str, markers: list[str]) -> Path:
    """A tiny Llama pair with ``template``; every marker the template writes is an added token with a row."""
    return checkpoint(root / name, "llama", rows=104 + len(markers), tokenizer_vocab=104, added_special=markers,
                      chat_template=template)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("content_models")
    return {
        "qwen3": _model(root, "qwen3", trl_template("qwen3"), MARKERS),
        "qwen3_training": _model(root, "qwen3_training", trl_template("qwen3_training"), MARKERS),
        "llama3": _model(root, "llama3", trl_template("llama3"), LLAMA_MARKERS),
        "llama3_1": _model(root, "llama3_1", trl_template("llama3_1"), LLAMA_MARKERS),
        "deepseek": _model(root, "deepseek", trl_template("deepseek_r1_distill"), []),
    }


def _scan(model, rows, tmp_path, name="train.jsonl", **kwargs):
    data = write_jsonl(tmp_path / "data" / name, rows)
    return audit(model, datasets=[data], select=["HVA5"], **kwargs)


def _found(report, code):
    return [f for f in report.findings if f.code == code]


def _rendered(model, turns):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(model).apply_chat_template(turns, tokenize=False)


def _trl_ids(model, rows, tmp_path, **config):
    out = trl_outcome(model, rows, "sft", tmp_path / "out", **config)
    assert out["stage"] == "ok", out["error"]
    return [list(r["input_ids"]) for r in out["dataset"]]


def _holds(model, ids: list[int], words: str) -> bool:
    """Whether TRL's ids hold the ids of ``words`` in order (a contiguous run)."""
    from transformers import AutoTokenizer

    want = AutoTokenizer.from_pretrained(model).encode(words, add_special_tokens=False)
    return any(ids[i:i + len(want)] == want for i in range(len(ids) - len(want) + 1))


# Multi-turn reasoning: Qwen3's template keeps only the reasoning after the last user query.
REASONING_ROWS = [
    {"messages": [U("w1"), A("w13", reasoning_content="w11 w12"), U("w2"), A("w23", reasoning_content="w21 w22")]},
    {"messages": [U("w3"), A("<think>\nw31 w32\n</think>\n\nw33"), U("w4"), A("<think>\nw41\n</think>\n\nw43")]},
]


def test_qwen3_drops_earlier_turns_reasoning_named_by_row_and_field(models, tmp_path):
    for row in REASONING_ROWS:  # transformers' own render: the first answer's reasoning is gone, the last kept
        text = _rendered(models["qwen3"], row["messages"])
        first, last = row["messages"][1], row["messages"][3]
        assert (first.get("reasoning_content") or "w31 w32") not in text
        assert (last.get("reasoning_content") or "w41") in text
    ids = _trl_ids(models["qwen3"], REASONING_ROWS, tmp_path)  # TRL trains on the row without it
    assert not _holds(models["qwen3"], ids[0], "w11 w12") and not _holds(models["qwen3"], ids[1], "w31 w32")
    assert _holds(models["qwen3"], ids[0], "w21 w22")
    found = _found(_scan(models["qwen3"], REASONING_ROWS, tmp_path), "HVA556")
    assert len(found) == 1
    hit = found[0]
    assert hit.location.row == 0 and hit.location.column == "messages"
    assert "2 row(s)" in hit.message
    assert "reasoning_content (turn 1)" in hit.message and "<think> block of content (turn 1)" in hit.message
    assert "turn 3" not in hit.message  # the last answer keeps its reasoning


def test_deepseek_r1_distill_drops_every_think_block(models, tmp_path):
    rows = [{"messages": [U("w1"), A("<think>\nw31 w32\n</think>\n\nw33")]}]
    text = _rendered(models["deepseek"], rows[0]["messages"])
    assert "w31 w32" not in text and "w33" in text  # even the last (only) answer loses its reasoning
    found = _found(_scan(models["deepseek"], rows, tmp_path), "HVA556")
    assert len(found) == 1 and "<think> block of content (turn 1)" in found[0].message


def test_quiet_with_a_template_that_keeps_every_turns_reasoning(models, tmp_path):
    for row in REASONING_ROWS:
        text = _rendered(models["qwen3_training"], row["messages"])
        assert all(w in text for w in ("w11 w12" if "w11" in json.dumps(row) else "w31 w32", "w13" if "w13" in
                                       json.dumps(row) else "w33"))
    assert _found(_scan(models["qwen3_training"], REASONING_ROWS, tmp_path), "HVA556") == []
    single = [{"messages": [U("w1"), A("w13", reasoning_content="w11 w12")]}]  # Qwen3 keeps the last turn's
    assert "w11 w12" in _rendered(models["qwen3"], single[0]["messages"])
    assert _found(_scan(models["qwen3"], single, tmp_path, "single.jsonl"), "HVA556") == []


# Tool calls: Llama-3 drops them; Llama-3.1 renders the call and drops the content beside it (and any
# reasoning); Qwen3 renders the call as JSON with the content.
TOOL_ROWS = [
    {"messages": [U("w1"), A("w50", tool_calls=[CALL("w42", w44="w43")]), {"role": "tool", "content": "w60"},
                  A("w51")]},
    {"messages": [U("w2"), A("w52", reasoning_content="w70 w71"), U("w3"), A("w53")]},
]


def test_llama3_drops_tool_calls(models, tmp_path):
    rows = [{"messages": [U("w1"), A("", tool_calls=[CALL("w42", w44="w43")]), {"role": "tool", "content": "w60"},
                          A("w51")]}]
    text = _rendered(models["llama3"], rows[0]["messages"])
    assert "w42" not in text and "w43" not in text
    ids = _trl_ids(models["llama3"], rows, tmp_path)
    assert not _holds(models["llama3"], ids[0], "w42")
    found = _found(_scan(models["llama3"], rows, tmp_path), "HVA556")
    assert len(found) == 1 and found[0].location.row == 0 and "tool_calls (turn 1)" in found[0].message


def test_llama3_1_drops_the_content_beside_a_tool_call_and_the_reasoning(models, tmp_path):
    texts = [_rendered(models["llama3_1"], r["messages"]) for r in TOOL_ROWS]
    assert '{"name": "w42", "parameters": {"w44": "w43"}}' in texts[0] and "w50" not in texts[0]
    assert "w70" not in texts[1] and "w52" in texts[1]
    ids = _trl_ids(models["llama3_1"], TOOL_ROWS, tmp_path)
    assert not _holds(models["llama3_1"], ids[0], "w50") and not _holds(models["llama3_1"], ids[1], "w70 w71")
    found = _found(_scan(models["llama3_1"], TOOL_ROWS, tmp_path), "HVA556")
    assert len(found) == 1
    message = found[0].message
    assert "content (turn 1)" in message and "reasoning_content (turn 1)" in message and "2 row(s)" in message
    assert "tool_calls" not in message  # reformatted as JSON with "parameters", not dropped


def test_quiet_where_the_template_reformats_tool_calls_but_keeps_them(models, tmp_path):
    rows = [TOOL_ROWS[0], {"messages": [U("w1"), A("", tool_calls=[CALL("w42", w44="w43", w45=7)]),
                                        {"role": "tool", "content": "w60"}, A("w51")]}]
    text = _rendered(models["qwen3"], rows[0]["messages"])
    assert '<tool_call>\n{"name": "w42", "arguments": {"w44": "w43"}}\n</tool_call>' in text and "w50" in text
    assert _found(_scan(models["qwen3"], rows, tmp_path), "HVA556") == []
    call_only = [rows[1]]  # Llama-3.1: a call without content is rendered (as JSON), nothing lost
    assert '"parameters": {"w44": "w43", "w45": 7}' in _rendered(models["llama3_1"], call_only[0]["messages"])
    assert _found(_scan(models["llama3_1"], call_only, tmp_path, "call.jsonl"), "HVA556") == []


def test_prompt_turns_are_not_trained_under_completion_only_loss(models, tmp_path):
    """A dropped field in the prompt of a prompt-completion row gets no loss: not reported."""
    rows = [{"prompt": [U("w1"), A("w13", reasoning_content="w11 w12"), U("w2")],
             "completion": [A("w23", reasoning_content="w21 w22")]}]
    assert "w11 w12" not in _rendered(models["qwen3"], rows[0]["prompt"] + rows[0]["completion"])
    assert _found(_scan(models["qwen3"], rows, tmp_path), "HVA556") == []
    report = _scan(models["qwen3"], rows, tmp_path, "all.jsonl", completion_only_loss=False)
    assert [f.code for f in report.findings if f.code == "HVA556"] == ["HVA556"]


# Double BOS: a tokenizer whose post-processor prepends <s>, and templates that render {{ bos_token }} or not.
BOS_CHATML = "{{ bos_token }}" + CHATML


def _with_bos_processor(folder: Path) -> Path:
    from tokenizers import Tokenizer, processors

    tk = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tk.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", 1)])
    tk.save(str(folder / "tokenizer.json"))
    return folder


@pytest.fixture(scope="module")
def bos_models(tmp_path_factory):
    root = tmp_path_factory.mktemp("bos_models")
    return {
        "adds_bos": _with_bos_processor(chat_checkpoint(root / "adds_bos", BOS_CHATML, resized=True)),
        "plain_template": _with_bos_processor(chat_checkpoint(root / "plain_template", CHATML, resized=True)),
        "no_processor": chat_checkpoint(root / "no_processor", BOS_CHATML, resized=True),
    }


def _pre_rendered(model, conversations):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model)
    return [{"text": tok.apply_chat_template(c, tokenize=False)} for c in conversations]


CONVERSATIONS = [[U("w1 w5"), A("w7 w8")], [U("w2"), A("w9")]]


def test_double_bos_on_text_rendered_beforehand(bos_models, tmp_path):
    model = bos_models["adds_bos"]
    rows = _pre_rendered(model, CONVERSATIONS)
    assert all(r["text"].startswith("<s>") for r in rows)
    ids = _trl_ids(model, rows, tmp_path)  # SFTTrainer tokenizes a text column with special tokens
    assert all(i[:2] == [1, 1] for i in ids)
    found = _found(_scan(model, rows, tmp_path), "HVA557")
    assert len(found) == 1
    assert found[0].location.column == "text" and found[0].location.row == 0 and found[0].location.position == 1
    assert "2 row(s)" in found[0].message


def test_double_bos_on_prompt_completion_strings(bos_models, tmp_path):
    model = bos_models["adds_bos"]
    rows = [{"prompt": "<s>w1 w5", "completion": " w7"}, {"prompt": "w2", "completion": " w9"}]
    ids = _trl_ids(model, rows, tmp_path)
    assert ids[0][:2] == [1, 1] and ids[1][:2] == [1, ids[1][1]] and ids[1][1] != 1
    found = _found(_scan(model, rows, tmp_path), "HVA557")
    assert len(found) == 1 and found[0].location.row == 0 and "1 row(s)" in found[0].message


def test_quiet_when_trl_renders_the_turns_or_nothing_doubles(bos_models, tmp_path):
    conversational = [{"messages": c} for c in CONVERSATIONS]
    ids = _trl_ids(bos_models["adds_bos"], conversational, tmp_path)  # apply_chat_template adds no special tokens
    assert all(i[0] == 1 and i[1] != 1 for i in ids)
    assert _found(_scan(bos_models["adds_bos"], conversational, tmp_path), "HVA557") == []
    for name in ("plain_template", "no_processor"):  # the template renders no BOS / the tokenizer adds none
        rows = _pre_rendered(bos_models[name], CONVERSATIONS)
        ids = _trl_ids(bos_models[name], rows, tmp_path)
        assert all(i[:2] != [1, 1] for i in ids)
        assert _found(_scan(bos_models[name], rows, tmp_path, f"{name}.jsonl"), "HVA557") == []
