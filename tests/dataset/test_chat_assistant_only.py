"""Assistant-only loss with the stock Llama-3, Gemma-3 and gpt-oss templates (no ``{% generation %}`` block):
TRL's SFTTrainer swaps in its own training template and trains, so the scan asks the installed TRL for that
template and renders with it. Every verdict is decided by running TRL's dataset preparation (and one loss
step) on the same rows. The stock templates are the ones TRL itself recognises, read from the installed trl
package (its ``chat_templates`` folder holds the public templates it compares against)."""

from __future__ import annotations

import importlib.resources

import pyarrow as pa
import pytest
from builders import checkpoint
from chat_builders import CHATML, MARKERS, trl_outcome
from dataset_builders import write_jsonl

from hf_vocab_audit import audit
from hf_vocab_audit.dataset import chat_trl
from hf_vocab_audit.dataset.chat_formats import detect
from hf_vocab_audit.dataset.chat_render import ChatSettings, prepare
from hf_vocab_audit.dataset.chat_settings import plan
from hf_vocab_audit.facts import gather

trl = pytest.importorskip("trl")

# The control tokens each stock template writes (added special tokens of the tiny tokenizer).
STOCK = {
    "llama3": ["<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"],
    "gemma3": ["<start_of_turn>", "<end_of_turn>", "<start_of_image>"],
    "gptoss": ["<|start|>", "<|message|>", "<|end|>", "<|channel|>", "<|return|>", "<|call|>", "<|constrain|>"],
}


def U(text):  # noqa: N802 - a turn
    return {"role": "user", "content": text}


def A(text):  # noqa: N802
    return {"role": "assistant", "content": text}


ROWS = [{"messages": [U("w1 w5"), A("w7 w8")]}, {"messages": [U("w2"), A("w9"), U("w3"), A("w4")]}]


def stock_template(name):
    return (importlib.resources.files("trl") / "chat_templates" / f"{name}.jinja").read_text(encoding="utf-8")


def stock_checkpoint(folder, name, *, resized=True):
    markers = STOCK[name]
    return checkpoint(folder, "llama", rows=104 + (len(markers) if resized else 0), tokenizer_vocab=104,
                      added_special=markers, chat_template=stock_template(name))


def _scan(model, rows, tmp_path, **kwargs):
    data = write_jsonl(tmp_path / "data" / "train.jsonl", rows)
    return audit(model, datasets=[data], select=["HVA5"], **kwargs)


@pytest.mark.parametrize("name", sorted(STOCK))
def test_a_stock_template_trains_as_trl_patches_it(name, tmp_path):
    model = stock_checkpoint(tmp_path / name, name)
    ran = trl_outcome(model, ROWS, "sft", tmp_path / "out", assistant_only_loss=True)
    assert ran["stage"] == "ok", ran["error"]
    report = _scan(model, ROWS, tmp_path, assistant_only_loss=True)
    assert list(report.findings) == []
    assert f"TRL {trl.__version__} swaps in its training template" in report.dataset.splits[0].chat_settings
    # The ids TRL trains on, and which get a loss, are the scan's.
    facts = gather(model)
    chat = plan(detect(pa.Table.from_pylist(ROWS).schema), facts, ChatSettings(assistant_only_loss=True))
    backend = facts.tokenizer.backend
    backend.no_padding()
    backend.no_truncation()
    got = prepare(chat.renderer, pa.Table.from_pylist(ROWS).to_pylist(), backend)
    for row, ex in zip(got, ran["dataset"], strict=True):
        (seq,) = row.sequences.values()
        assert seq.ids == ex["input_ids"]
        assert seq.labels_mask == [lab != -100 for lab in ex["labels"]]
        assert any(seq.labels_mask)


def test_the_patched_template_still_finds_ids_without_rows(tmp_path):
    model = stock_checkpoint(tmp_path / "bad", "llama3", resized=False)
    ran = trl_outcome(model, ROWS, "sft", tmp_path / "out", assistant_only_loss=True)
    assert ran["stage"] == "forward" and "index out of range" in ran["error"]
    assert sorted({f.code for f in _scan(model, ROWS, tmp_path, assistant_only_loss=True).findings}) == ["HVA501"]


def test_a_template_trl_cannot_patch_is_reported_with_what_trl_says(tmp_path):
    model = checkpoint(tmp_path / "chatml", "llama", rows=106, tokenizer_vocab=104, added_special=MARKERS,
                       chat_template=CHATML)
    ran = trl_outcome(model, ROWS, "sft", tmp_path / "out", assistant_only_loss=True)
    assert ran["stage"] == "prepare"
    said = ran["error"].split(": ", 1)[1].split("\n")[0]  # TRL's own sentence
    report = _scan(model, ROWS, tmp_path, assistant_only_loss=True)
    (hit,) = report.findings
    assert hit.code == "HVA551" and f"TRL {trl.__version__} refuses" in hit.message and said in hit.message
    assert "every assistant mask is empty" not in hit.message
    assert list(_scan(model, ROWS, tmp_path).findings) == []  # without assistant-only loss TRL trains


def test_strings_under_assistant_only_loss_are_refused_as_trl_refuses_them(tmp_path):
    model = stock_checkpoint(tmp_path / "m", "llama3")
    rows = [{"prompt": "w1 w5", "completion": " w7"}] * 2
    ran = trl_outcome(model, rows, "sft", tmp_path / "out", assistant_only_loss=True)
    assert ran["stage"] == "prepare" and "not conversational" in ran["error"]
    report = _scan(model, rows, tmp_path, assistant_only_loss=True)
    assert [f.code for f in report.findings] == ["HVA551"] and "not conversational" in report.findings[0].message


def test_without_trl_the_assumed_behaviour_is_named(tmp_path, monkeypatch):
    """Where TRL is not installed the scan cannot know which templates it patches: the stock template is
    reported, and the finding says which TRL behaviour it assumed and what to install."""
    monkeypatch.setattr(chat_trl, "trl_version", lambda: None)
    model = stock_checkpoint(tmp_path / "m", "llama3")
    report = _scan(model, ROWS, tmp_path, assistant_only_loss=True)
    (hit,) = report.findings
    assert hit.code == "HVA551" and "decided without TRL" in hit.message and "pip install trl" in hit.message
    assert report.to_dict()["dataset"]["splits"][0]["columns"]["messages"]["tokens"] > 0  # ids still checked
