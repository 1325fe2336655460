"""``--target gguf|vllm``: what llama.cpp's converter or a serving engine will do with the checkpoint."""

from __future__ import annotations

from ...core.options import AuditOptions, TargetKind
from ...core.scope import Scope
from ...core.sections import VllmSection
from ..runner import run_scope
from . import Analysis, AnalysisResult, AuditContext, Sections
from .weights import WeightsResult


class TargetAnalysis(Analysis):
    name = "target"
    scope = Scope.TARGET

    def wanted(self, options: AuditOptions) -> bool:
        return options.target_kind is not None

    def run(self, ctx: AuditContext) -> AnalysisResult:
        from ...facts.targets import predict, undecodable_ids

        assert ctx.options.target_kind is not None
        predicted = predict(ctx.facts, ctx.options.target_kind, ctx.options.tp, ctx.options.tool_call_parser,
                            ctx.options.reasoning_parser)
        run = run_scope(ctx.rules, Scope.TARGET, predicted)
        if predicted.target is not TargetKind.VLLM:
            return AnalysisResult(run)
        suppress = undecodable_ids(ctx.facts)
        section = VllmSection(tuple(suppress))
        weights = ctx.found(WeightsResult)
        if weights is not None and weights.weights is not None:  # untrained rows of tokens not in normal use
            wf = weights.weights
            reserved = [i for i in wf.flagged_ids() if not wf.used(i)]
            section = VllmSection(tuple(sorted(set(suppress) | set(reserved))), tuple(reserved))
        return AnalysisResult(run, Sections(vllm=section))


__all__ = ["TargetAnalysis"]
