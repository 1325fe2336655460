"""The analyses, in the order they run (a later one may read an earlier one's result: the dataset scan and
``--target vllm`` read ``--weights``). A new analysis is an :class:`~hf_vocab_audit.rules.analyses.Analysis`
subclass and one line in ``ANALYSES``."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ...core.scope import Scope
from ..registry import Rule
from ..runner import run_scope
from . import Analysis, AnalysisResult, AuditContext
from .base import BaseAnalysis, BaseRowsAnalysis
from .dataset import DatasetAnalysis
from .draft import DraftAnalysis
from .gguf_source import GGUFSourceAnalysis
from .target import TargetAnalysis
from .weights import WeightsAnalysis

ANALYSES: list[Analysis] = [
    WeightsAnalysis(),
    DatasetAnalysis(),
    TargetAnalysis(),
    GGUFSourceAnalysis(),
    BaseAnalysis(),
    BaseRowsAnalysis(),  # reads BaseAnalysis's pair
    DraftAnalysis(),
]


def wanted(ctx: AuditContext) -> list[Analysis]:
    """The analyses ``ctx.options`` ask for, in order."""
    return [a for a in ANALYSES if a.wanted(ctx.options)]


def _because(why: str) -> Callable[[Rule], str]:
    return lambda _rule: why


def run_analyses(ctx: AuditContext, cannot: Mapping[Scope, str]) -> list[tuple[Analysis, AnalysisResult]]:
    """Run every analysis the options ask for; one whose scope the facts' source ``cannot`` feed has its rules
    skipped with the source's reason. Each result is also left in ``ctx.results`` for the ones after it."""
    out = []
    for analysis in wanted(ctx):
        why = cannot.get(analysis.scope) if analysis.scope is not None else None
        if why and analysis.scope is not None:
            result = AnalysisResult(run_scope(ctx.rules, analysis.scope, None, _because(why)))
        else:
            result = analysis.run(ctx)
        ctx.results.append(result)
        out.append((analysis, result))
    return out


__all__ = ["ANALYSES", "run_analyses", "wanted"]
