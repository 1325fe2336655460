"""``check TARGET --draft DRAFT``: the target against its speculative-decoding draft (HVA85x)."""

from __future__ import annotations

from ...core.options import AuditOptions
from ...core.scope import Scope
from ..runner import run_scope
from . import Analysis, AnalysisResult, AuditContext


class DraftAnalysis(Analysis):
    name = "draft"
    scope = Scope.DRAFT

    def wanted(self, options: AuditOptions) -> bool:
        return options.draft is not None

    def run(self, ctx: AuditContext) -> AnalysisResult:
        from ...facts.drafts import compare_draft
        from ...facts.sources.paired import gather_paired

        assert ctx.options.draft is not None
        other = gather_paired(ctx.options.draft, "--draft", ctx.options.hub_timeout)
        return AnalysisResult(run_scope(ctx.rules, Scope.DRAFT, compare_draft(ctx.facts, other.facts, other.ref)))


__all__ = ["DraftAnalysis"]
