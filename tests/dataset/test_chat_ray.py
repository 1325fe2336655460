"""``--engine ray`` on chat and instruction splits: the same findings, rows, turns and report as the local engine."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from chat_builders import CHATML_GEN, chat_checkpoint
from dataset_builders import write_jsonl, write_parquet

from hf_vocab_audit import audit
from hf_vocab_audit.dataset.chat import summarize
from hf_vocab_audit.dataset.chat_formats import detect
from hf_vocab_audit.dataset.chat_render import ChatSettings
from hf_vocab_audit.dataset.chat_settings import renderer_for
from hf_vocab_audit.dataset.engines.ray import shift
from hf_vocab_audit.dataset.scan import limits_for
from hf_vocab_audit.dataset.summary import ScanContext
from hf_vocab_audit.facts import gather
from hf_vocab_audit.formats import render


@pytest.fixture(scope="module")
def ray_here():
    ray = pytest.importorskip("ray", reason="ray is not installed: pip install 'hf-vocab-audit[ray]'")
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, object_store_memory=150 * 1024**2, include_dashboard=False, log_to_driver=False,
                 logging_level="ERROR")
    yield ray
    if started:
        ray.shutdown()


def _turns(*pairs):
    return [{"role": r, "content": c} for r, c in pairs]


def _chat_data(root):
    """Messages over three JSON Lines files (a refused row in the last), prompt-completion in parquet files."""
    for f in range(3):
        rows = [{"messages": _turns(("user", f"w{i % 40}"), ("assistant", "w7 w8"))} for i in range(60)]
        if f == 2:
            rows[41] = {"messages": _turns(("user", "w1"), ("system", "w2"), ("assistant", "w3"))}
        write_jsonl(root / "jl" / "train" / f"part-{f}.jsonl", rows)
    for f in range(2):
        write_parquet(root / "pq" / "train" / f"{f}.parquet",
                      {"prompt": [_turns(("user", f"w{i}")) for i in range(50)],
                       "completion": [_turns(("assistant", "w9")) for _ in range(50)]})
    return [root / "jl", root / "pq"]


def _report_json(report):
    data = json.loads(render(report, "json"))
    data.pop("duration_s")
    data["dataset"].pop("seconds")
    return data


def test_ray_report_equals_local_report_on_chat_splits(ray_here, tmp_path):
    model = chat_checkpoint(tmp_path / "model", CHATML_GEN, resized=False)
    specs = _chat_data(tmp_path)
    local = audit(model, datasets=specs, batch_size=7, select=["HVA5"], max_length=6)
    ray = audit(model, datasets=specs, batch_size=7, select=["HVA5"], max_length=6, engine="ray")
    rows = {(f.code, f.location.file, f.location.row) for f in ray.findings}
    assert ("HVA550", str(tmp_path / "jl"), 161) in rows  # the third file's row 41
    assert {f.code for f in local.findings} == {"HVA501", "HVA550", "HVA552"}  # prompts fill 6 tokens
    assert _report_json(ray) == _report_json(local)


def test_shift_moves_the_turn_notes_with_the_rows(tmp_path):
    model = chat_checkpoint(tmp_path / "model", CHATML_GEN, resized=False)
    facts = gather(model)
    batch = pa.Table.from_pylist([{"messages": _turns(("user", "w1"), ("assistant", "w2"))}] * 3)
    renderer = renderer_for(detect(batch.schema), facts, ChatSettings())
    ctx = ScanContext("s", "train", (), limits_for(facts)[0], facts.tokenizer.backend, chat=renderer)
    moved = shift(summarize(batch, 0, ctx), 500)
    assert moved == summarize(batch, 500, ctx)
    assert moved.notes[("s", "train", "messages", 500, 4)] == "turn 1 (assistant)"
