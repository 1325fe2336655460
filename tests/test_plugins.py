"""The audit's two plug-in axes hold their shape: a weight format and an analysis are each one class and one
registry line, and the one pipeline (``audit.audit_source``) runs them without knowing their names.

The toy format stores tensor shapes in ``model.toy.json``; a checkpoint stored that way is audited like any
other (its embedding found, an id past its rows reported), and ``--weights`` says in the format's own words
that it cannot read its rows. The toy analysis adds a report section and, when its input is missing, a
coverage gap that fails the gate closed like any other gap.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

import pytest
from malformed import CONFIG, VOCAB, embedding_header, tiny_checkpoint, write_json

from hf_vocab_audit.audit import audit
from hf_vocab_audit.core.coverage import Gap
from hf_vocab_audit.core.options import AuditOptions
from hf_vocab_audit.core.report import Report
from hf_vocab_audit.facts.tensors import CheckpointTensors
from hf_vocab_audit.facts.weight_formats import WeightFormat
from hf_vocab_audit.facts.weight_formats import registry as formats
from hf_vocab_audit.io.safetensors_header import TensorInfo
from hf_vocab_audit.rules.analyses import Analysis, AnalysisResult, AuditContext, Sections
from hf_vocab_audit.rules.analyses import registry as analyses

TOY_FILE = "model.toy.json"


class ToyFormat(WeightFormat):
    """Tensor names, dtypes and shapes in one JSON file: the whole of a new weight format."""

    name: ClassVar[str] = "toy"
    no_rows = "the toy format keeps shapes only; {file} has no rows to read"

    def load(self, folder: Path) -> CheckpointTensors | None:
        path = folder / TOY_FILE
        if not path.is_file():
            return None
        table = json.loads(path.read_text(encoding="utf-8"))
        tensors = {n: TensorInfo(n, t["dtype"], tuple(t["shape"]), TOY_FILE) for n, t in table.items()}
        return CheckpointTensors(self.name, (TOY_FILE,), None, tensors)


class ToyAnalysis(Analysis):
    """Counts the tokenizer's tokens into an extension section; no tokenizer is a gap."""

    name = "toy"
    scope = None  # no rules of its own

    def wanted(self, options: AuditOptions) -> bool:
        return True

    def run(self, ctx: AuditContext) -> AnalysisResult:
        tok = ctx.facts.tokenizer
        if tok is None:
            return AnalysisResult(gaps=(Gap("the toy count", "no tokenizer to count"),))
        return AnalysisResult(sections=Sections(extra={"toy": {"tokens": tok.length}}))


@pytest.fixture
def toy_format(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(formats, "WEIGHT_FORMATS", [*formats.WEIGHT_FORMATS, ToyFormat()])  # the one line


@pytest.fixture
def toy_analysis(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(analyses, "ANALYSES", [*analyses.ANALYSES, ToyAnalysis()])  # the one line


def toy_checkpoint(folder: Path, rows: int = len(VOCAB)) -> Path:
    """The healthy tiny checkpoint with its safetensors file replaced by the toy format's table."""
    tiny_checkpoint(folder)
    (folder / "model.safetensors").unlink()
    header, _ = embedding_header(rows)
    write_json(folder / TOY_FILE, {n: {"dtype": e["dtype"], "shape": e["shape"]} for n, e in header.items()
                                   if n != "__metadata__"})
    write_json(folder / "config.json", {**CONFIG, "vocab_size": rows})
    return folder


def codes(report: Report) -> set[str]:
    return {f.code for f in report.findings}


def test_a_toy_weight_format_is_read_like_safetensors(tmp_path: Path, toy_format: None) -> None:
    report = audit(toy_checkpoint(tmp_path / "m"))
    assert report.facts["weights_format"] == "toy"
    assert report.facts["input_embedding"]["name"] == "model.embed_tokens.weight"
    assert report.exit_code() == 0, report.findings


def test_an_id_past_a_toy_formats_rows_is_reported(tmp_path: Path, toy_format: None) -> None:
    report = audit(toy_checkpoint(tmp_path / "m", rows=len(VOCAB) - 2))
    assert "HVA101" in codes(report)
    assert report.exit_code() == 1


def test_without_its_registry_line_the_toy_format_is_not_read(tmp_path: Path) -> None:
    report = audit(toy_checkpoint(tmp_path / "m", rows=len(VOCAB) - 2))
    assert report.facts["weights_format"] is None
    assert "HVA101" not in codes(report)


def test_weights_on_a_toy_format_gives_the_formats_reason(tmp_path: Path, toy_format: None) -> None:
    report = audit(toy_checkpoint(tmp_path / "m"), weights=True)
    gaps = [g for g in report.coverage.not_examined if "--weights" in g.what]
    assert gaps and gaps[0].reason == f"the toy format keeps shapes only; {TOY_FILE} has no rows to read"
    assert report.exit_code() == 2  # not examined fails closed
    assert report.exit_code(allow_partial=True) == 0


def test_a_toy_analysis_adds_its_section(tmp_path: Path, toy_analysis: None) -> None:
    report = audit(tiny_checkpoint(tmp_path / "m"))
    assert report.extra["toy"] == {"tokens": len(VOCAB)}
    assert report.to_dict()["toy"] == {"tokens": len(VOCAB)}
    assert Report.from_dict(report.to_dict()).extra["toy"] == {"tokens": len(VOCAB)}
    assert report.exit_code() == 0


def test_a_toy_analysis_gap_fails_the_audit_closed(tmp_path: Path, toy_analysis: None) -> None:
    folder = tiny_checkpoint(tmp_path / "m")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (folder / name).unlink()
    report = audit(folder)
    assert any(g.what == "the toy count" and g.reason == "no tokenizer to count" for g in report.coverage.not_examined)
    assert "toy" not in report.extra
    assert report.exit_code() == 2


def test_without_its_registry_line_the_toy_analysis_does_not_run(tmp_path: Path) -> None:
    assert "toy" not in audit(tiny_checkpoint(tmp_path / "m")).extra


def test_the_limits_model_is_derived_once_per_audit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The static rules (HVA101, HVA102, positions, token types) and the dataset scan all read the one limits
    model of the facts: it is derived once, not once per reader."""
    from hf_vocab_audit.facts import limits

    calls = []
    derive = limits.derive_limits
    monkeypatch.setattr(limits, "derive_limits", lambda facts: calls.append(facts) or derive(facts))
    folder = tiny_checkpoint(tmp_path / "m")
    data = tmp_path / "data.jsonl"
    data.write_text('{"text": "a b c"}\n{"text": "d"}\n', encoding="utf-8")
    report = audit(folder, datasets=[str(data)])
    assert report.dataset is not None and report.exit_code() == 0, report.findings
    assert len(calls) == 1


def test_an_analysis_can_fill_every_typed_report_section() -> None:
    """``Sections`` (what analyses fill) and ``Report``'s typed sections name the same sections."""
    from dataclasses import fields

    from hf_vocab_audit.core.report import SECTIONS

    assert {f.name for f in fields(Sections)} - {"extra"} == set(SECTIONS)
