"""A GGUF's ``--source HF_DIR``: the HF checkpoint it was converted from, compared id by id (HVA91x)."""

from __future__ import annotations

import os

from ...core.options import AuditOptions
from ...core.scope import Scope
from ...facts import gather
from ..runner import run_scope
from . import Analysis, AnalysisResult, AuditContext, Sections


class GGUFSourceAnalysis(Analysis):
    name = "gguf-source"
    scope = Scope.GGUF_SOURCE
    located = False  # its findings name the HF source's files, not the GGUF's

    def wanted(self, options: AuditOptions) -> bool:
        return options.source is not None

    def run(self, ctx: AuditContext) -> AnalysisResult:
        from ...facts.gguf_source import compare

        source = ctx.options.source
        assert source is not None
        hf = gather(os.fspath(source), ctx.options.tokenizer_path)
        why = None if hf.tokenizer is not None else hf.missing.get("tokenizer", "the source has no tokenizer")
        run = run_scope(ctx.rules, Scope.GGUF_SOURCE, compare(ctx.facts, hf, str(source)), lambda _r: why)
        return AnalysisResult(run, Sections(gguf_source=str(source)))


__all__ = ["GGUFSourceAnalysis"]
