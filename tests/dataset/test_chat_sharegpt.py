"""ShareGPT's ``conversations`` (turns of ``from``/``value``, roles ``human``/``gpt``/``system``): read as
TRL's SFTTrainer reads them (it converts the keys to role/content and keeps the roles), every verdict
decided by running TRL's own preparation and one loss step of a tiny model on CPU."""

from __future__ import annotations

import chat_builders
import pyarrow as pa
import pytest
from chat_builders import trl_outcome
from dataset_builders import write_jsonl

from hf_vocab_audit import audit
from hf_vocab_audit.dataset.chat_formats import detect
from hf_vocab_audit.dataset.chat_render import ChatSettings, prepare
from hf_vocab_audit.dataset.chat_settings import renderer_for
from hf_vocab_audit.facts import gather

pytest.importorskip("trl")

# A template that knows only the OpenAI roles (as many stock templates do, with their own wording).
STRICT = ("{% for m in messages %}{% if m['role'] not in ['user', 'assistant', 'system'] %}"
          "{{ raise_exception('Unknown role: ' + m['role']) }}{% endif %}"
          "<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}")


def S(role, text):  # noqa: N802 - a ShareGPT turn
    return {"from": role, "value": text}


ROWS = [{"conversations": [S("system", "w3"), S("human", "w1 w5"), S("gpt", "w7 w8")]},
        {"conversations": [S("human", "w2"), S("gpt", "w9"), S("human", "w4"), S("gpt", "w6")]}]


@pytest.fixture(scope="module")
def chat_models(tmp_path_factory):
    root = tmp_path_factory.mktemp("sharegpt_models")
    models = chat_builders.chat_models(root)
    models["strict"] = chat_builders.chat_checkpoint(root / "strict", STRICT, resized=True)
    return models


def _codes(report):
    return sorted({f.code for f in report.findings if f.code.startswith("HVA5")})


def _scan(model, rows, tmp_path, **kwargs):
    data = write_jsonl(tmp_path / "data" / "train.jsonl", rows)
    return audit(model, datasets=[data], select=["HVA5"], **kwargs)


def test_sharegpt_is_recognised_from_its_columns():
    fmt = detect(pa.Table.from_pylist(ROWS).schema)
    assert fmt is not None and fmt.kind == "language-modeling" and fmt.sharegpt and fmt.columns == ("conversations",)
    assert "ShareGPT" in fmt.describe() and "roles kept" in fmt.describe()
    role_content = [{"conversations": [{"role": "user", "content": "w1"}]}]
    assert detect(pa.Table.from_pylist(role_content).schema) is None  # TRL converts from/value turns only
    assert detect(pa.Table.from_pylist(ROWS).schema, "off") is None


def test_healthy_and_broken_as_trl_runs_them(chat_models, tmp_path):
    good = trl_outcome(chat_models["good"], ROWS, "sft", tmp_path / "out")
    bad = trl_outcome(chat_models["bad"], ROWS, "sft", tmp_path / "out")
    assert good["stage"] == "ok", good["error"]
    assert bad["stage"] == "forward" and "index out of range" in bad["error"]  # the markers have no rows
    report = _scan(chat_models["good"], ROWS, tmp_path)
    assert _codes(report) == []
    assert "ShareGPT" in report.dataset.splits[0].format and report.dataset.splits[0].columns["conversations"].tokens
    report = _scan(chat_models["bad"], ROWS, tmp_path)
    assert _codes(report) == ["HVA501"]
    hit = report.findings[0]
    assert hit.location.column == "conversations" and hit.location.row == 0
    assert "turn 0 (system)" in hit.message  # the turn, under the role TRL passes on


def test_rendered_ids_are_the_ids_trl_trains_on(chat_models, tmp_path):
    """TRL keeps ``human``/``gpt`` as the roles: the template renders them as written, and so does the scan."""
    prepared = trl_outcome(chat_models["good"], ROWS, "sft", tmp_path / "out")["dataset"]
    facts = gather(chat_models["good"])
    renderer = renderer_for(detect(pa.Table.from_pylist(ROWS).schema), facts, ChatSettings())
    backend = facts.tokenizer.backend
    backend.no_padding()
    backend.no_truncation()
    got = prepare(renderer, pa.Table.from_pylist(ROWS).to_pylist(), backend)
    for row, ex in zip(got, prepared, strict=True):
        assert row.error is None
        (seq,) = row.sequences.values()
        assert seq.ids == ex["input_ids"]
        assert seq.labels_mask == [lab != -100 for lab in ex["labels"]]


def test_a_template_that_refuses_the_sharegpt_roles(chat_models, tmp_path):
    trl = trl_outcome(chat_models["strict"], ROWS, "sft", tmp_path / "out")
    assert trl["stage"] == "prepare" and "Unknown role: human" in trl["error"]
    report = _scan(chat_models["strict"], ROWS, tmp_path)
    assert _codes(report) == ["HVA550"]
    assert report.findings[0].location.row == 0 and "Unknown role: human" in report.findings[0].message
    mapped = [{"conversations": [S("user", "w1"), S("assistant", "w7")]}]  # the roles the template knows
    assert trl_outcome(chat_models["strict"], mapped, "sft", tmp_path / "out")["stage"] == "ok"
    assert _codes(_scan(chat_models["strict"], mapped, tmp_path)) == []


def test_assistant_only_loss_with_sharegpt_turns_is_refused_by_trl(chat_models, tmp_path):
    """TRL asks whether the data is conversational before it converts ShareGPT turns: with assistant-only loss
    it refuses the split, whatever the template; the scan says so (never a PASS)."""
    trl = trl_outcome(chat_models["good"], ROWS, "sft", tmp_path / "out", assistant_only_loss=True)
    assert trl["stage"] == "prepare" and "not conversational" in trl["error"]
    report = _scan(chat_models["good"], ROWS, tmp_path, assistant_only_loss=True)
    assert _codes(report) == ["HVA551"] and report.exit_code() == 1
    assert "ShareGPT" in report.findings[0].message and "not conversational" in report.findings[0].message
    assert report.dataset.splits[0].columns["conversations"].tokens > 0  # the ids are still checked


def test_the_cli_names_row_turn_and_token(chat_models, tmp_path, run_cli):
    data = write_jsonl(tmp_path / "sharegpt.jsonl", ROWS)
    code, out, _ = run_cli("check", chat_models["bad"], "--dataset", data, "--select", "HVA5")
    assert code == 1 and "HVA501" in out and "conversations" in out and "ShareGPT" in out
    code, out, _ = run_cli("check", chat_models["good"], "--dataset", data, "--select", "HVA5")
    assert code == 0, out
