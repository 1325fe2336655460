"""Reports round-trip: ``Report.from_dict(report.to_dict()) == report``, and a report read back from its JSON
renders every format exactly as the original, so every renderer works from the data alone."""

from __future__ import annotations

import json

import pytest
from builders import CHATML, checkpoint
from dataset_builders import write_jsonl

import hf_vocab_audit as hva
from hf_vocab_audit.core.report import Report
from hf_vocab_audit.demo import build_demo_checkpoint
from hf_vocab_audit.formats import RENDERERS, render
from hf_vocab_audit.gate import run_gate


@pytest.fixture(scope="module")
def scenarios(tmp_path_factory):
    root = tmp_path_factory.mktemp("roundtrip")
    demo = build_demo_checkpoint(root / "demo")
    healthy = checkpoint(root / "healthy", "llama", 104)
    partial = checkpoint(root / "partial", "llama", 104)
    (partial / "model.safetensors").unlink()
    cls = checkpoint(root / "cls", "bert-cls", 104, model={"num_labels": 3})
    data = write_jsonl(root / "d.jsonl", [{"text": "w1 w2", "label": v} for v in (1, 2, 3, 1)])
    chat = checkpoint(root / "chat", "llama", 104, added_special=["<|im_start|>", "<|im_end|>"], chat_template=CHATML)
    messages = write_jsonl(root / "c.jsonl", [{"messages": [{"role": "user", "content": "w1"},
                                                            {"role": "assistant", "content": "w2"}]}] * 3)
    return {
        "broken": run_gate(str(demo)).report,
        "exit-zero": run_gate(str(demo), exit_zero=True).report,
        "healthy": run_gate(str(healthy)).report,
        "partial": run_gate(str(partial), allow_partial=True).report,
        "not-examined": run_gate(str(partial)).report,
        "labels": run_gate(str(cls), datasets=[str(data)], formats=["html"]).report,
        "chat": run_gate(str(chat), datasets=[str(messages)]).report,
        "fixed": run_gate(str(demo), fix=True, output=root / "fixed").report,
        "unjudged": hva.audit(demo),
    }


NAMES = ["broken", "exit-zero", "healthy", "partial", "not-examined", "labels", "chat", "fixed", "unjudged"]


@pytest.mark.parametrize("name", NAMES)
def test_from_dict_of_to_dict_is_the_report(scenarios, name):
    report = scenarios[name]
    back = Report.from_dict(report.to_dict())
    if report.outcome is None:  # an unjudged report states the default gate's verdict
        report = report.judged()
    assert back == report


@pytest.mark.parametrize("name", NAMES)
def test_a_report_read_from_its_json_renders_every_format_the_same(scenarios, name):
    report = scenarios[name]
    back = Report.from_dict(json.loads(render(report, "json")))
    for fmt in RENDERERS:
        assert render(back, fmt) == render(report, fmt), fmt
