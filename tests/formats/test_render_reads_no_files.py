"""Renderers read the report, never the disk: the same report renders the same after its folder is gone,
from any working directory (SARIF regions and GitHub annotation lines were recorded during the audit)."""

from __future__ import annotations

import os
import shutil

from hf_vocab_audit.demo import build_demo_checkpoint
from hf_vocab_audit.formats import RENDERERS, render
from hf_vocab_audit.gate import run_gate


def test_rendering_does_not_depend_on_the_folder_or_the_working_directory(tmp_path, monkeypatch):
    folder = build_demo_checkpoint(tmp_path / "repo" / "models" / "broken")
    monkeypatch.chdir(tmp_path / "repo")
    report = run_gate("models/broken", cwd=tmp_path / "repo").report
    assert any(f.location.line for f in report.findings), "the audit records JSON line numbers"
    before = {fmt: render(report, fmt) for fmt in RENDERERS}
    assert '"startLine"' in before["sarif"] and ",line=" in before["github"]
    shutil.rmtree(folder)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.chdir(elsewhere)
    assert {fmt: render(report, fmt) for fmt in RENDERERS} == before
