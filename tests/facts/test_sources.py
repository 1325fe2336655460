"""Facts sources: one registry picks the source of a target; a new source is one class and one line."""

from __future__ import annotations

import json

import pytest

from hf_vocab_audit import audit
from hf_vocab_audit.core.findings import Source
from hf_vocab_audit.core.options import AuditOptions
from hf_vocab_audit.demo import build_demo_checkpoint
from hf_vocab_audit.errors import AuditError
from hf_vocab_audit.facts import gather
from hf_vocab_audit.facts.sources import FactsSource, SourceError, registry
from hf_vocab_audit.formats import render
from hf_vocab_audit.gate import run_gate
from hf_vocab_audit.rules.memory_locations import spoken


def test_each_kind_of_target_has_its_source(tmp_path):
    demo = build_demo_checkpoint(tmp_path / "demo")
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "adapter_config.json").write_text("{}")
    (tmp_path / "m.gguf").write_bytes(b"GGUF")
    names = {str(demo): "folder", str(tmp_path / "a"): "adapter", str(tmp_path / "m.gguf"): "gguf",
             "org/model@main": "hub"}
    assert {t: registry.resolve_source(t).name for t in names} == names
    assert registry.resolve_source(object()).name == "memory"
    assert registry.resolve_source("org/model", remote=False).name == "folder"  # audit() takes local targets


def test_a_source_error_is_an_audit_error_exit_2():
    assert issubclass(SourceError, AuditError)
    with pytest.raises(SourceError, match="--source HF_DIR applies to a GGUF target"):
        registry.resolve_source("some/folder/x").refuse(AuditOptions(source="hf"))


def test_a_toy_source_is_one_class_and_one_registry_line(tmp_path, monkeypatch):
    """Facts built in the test, audited through the gate as any other target: same findings as the folder."""
    demo = build_demo_checkpoint(tmp_path / "demo")
    built = gather(demo)

    class FakeSource(FactsSource):
        name = "fake"
        origin = Source.MEMORY
        lines = False

        @classmethod
        def accepts(cls, target: object) -> bool:
            return target == "fake:demo"

        def gather(self, options: AuditOptions):
            return built

    monkeypatch.setattr(registry, "SOURCES", [FakeSource, *registry.SOURCES])
    outcome = run_gate("fake:demo", cwd=tmp_path)
    direct = audit(demo)
    assert outcome.report.target == "fake:demo" and outcome.report.source is Source.MEMORY
    # A memory-origin report names the objects where a folder's names its files (memory_locations.spoken).
    assert [(f.code, f.message) for f in outcome.report.findings] == [(f.code, spoken(f.message))
                                                                      for f in direct.findings]
    assert outcome.exit_code == 1 and json.loads(render(outcome.report, "json"))["verdict"] == "FAIL"
