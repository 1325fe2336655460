"""Scan engines: one registry picks the engine; the dataset is resolved once and handed to it."""

from __future__ import annotations

import pytest
from dataset_builders import write_jsonl

from hf_vocab_audit import audit
from hf_vocab_audit.dataset import scan as scan_module
from hf_vocab_audit.dataset.engines import EngineError, ScanEngine
from hf_vocab_audit.dataset.engines.local import LocalEngine
from hf_vocab_audit.dataset.engines.registry import ENGINES
from hf_vocab_audit.errors import AuditError


def _codes(report):
    return sorted((f.code, f.location.row, f.message) for f in report.findings)


def test_a_toy_engine_is_one_class_and_one_registry_line(bert_cls, tmp_path, monkeypatch):
    data = write_jsonl(tmp_path / "t.jsonl", [{"text": "w1", "label": v} for v in (0, 1, 7)])
    seen = []

    class CountingEngine(ScanEngine):
        name = "counting"

        def scan(self, resolved, options):
            seen.append([o.split.name for o in resolved.opened])
            return LocalEngine().scan(resolved, options)

    monkeypatch.setitem(ENGINES, "counting", CountingEngine)
    toy = audit(bert_cls, datasets=[str(data)], engine="counting")
    local = audit(bert_cls, datasets=[str(data)])
    assert seen == [["train"]] and "HVA510" in {f.code for f in toy.findings}
    assert _codes(toy) == _codes(local)


def test_an_unknown_engine_is_refused_before_the_data_is_opened(bert_cls, tmp_path, monkeypatch):
    monkeypatch.setattr(scan_module, "open_spec", lambda *_: pytest.fail("the dataset was opened"))
    with pytest.raises(EngineError, match="unknown engine 'spark' \\(local or ray\\)"):
        audit(bert_cls, datasets=[str(tmp_path / "t.jsonl")], engine="spark")
    assert issubclass(EngineError, AuditError) and set(ENGINES) >= {"local", "ray"}


def test_the_spec_is_resolved_once_by_the_local_side(bert_cls, tmp_path, monkeypatch):
    """The engine gets the opened splits with what their SPEC resolved to; it does not open the SPEC again."""
    data = write_jsonl(tmp_path / "t.jsonl", [{"text": "w1", "label": 0}])
    opened = []
    real = scan_module.open_spec

    def counting(spec, config=None):
        opened.append(spec)
        return real(spec, config)

    monkeypatch.setattr(scan_module, "open_spec", counting)
    got = []

    class Peek(LocalEngine):
        name = "peek"

        def scan(self, resolved, options):
            got.extend(o.split.resolved for o in resolved.opened)
            return super().scan(resolved, options)

    monkeypatch.setitem(ENGINES, "peek", Peek)
    audit(bert_cls, datasets=[str(data)], engine="peek")
    assert opened == [str(data)]
    (resolved,) = got
    assert (resolved.kind, resolved.builder, resolved.path) == ("file", "json", data)


def test_an_unknown_chat_format_is_refused_before_the_data_is_opened(bert_cls, tmp_path, monkeypatch):
    monkeypatch.setattr(scan_module, "open_spec", lambda *_: pytest.fail("the dataset was opened"))
    with pytest.raises(AuditError, match="--chat-format 'chatml': use one of language-modeling"):
        audit(bert_cls, datasets=[str(tmp_path / "t.jsonl")], chat_format="chatml")
