"""``--weights``: the embedding rows' statistics (numpy, imported only when a weights rule is selected)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...core.options import AuditOptions
from ...core.scope import Scope
from ..runner import run_weights
from . import Analysis, AnalysisResult, AuditContext, Sections

if TYPE_CHECKING:
    from ...weights.analysis import WeightFacts


@dataclass(frozen=True)
class WeightsResult(AnalysisResult):
    weights: WeightFacts | None = None  # the rows' classification, for the analyses after it


class WeightsAnalysis(Analysis):
    name = "weights"
    scope = Scope.WEIGHTS

    def wanted(self, options: AuditOptions) -> bool:
        return options.weights

    def run(self, ctx: AuditContext) -> WeightsResult:
        run, weights = run_weights(ctx.facts, ctx.rules)
        return WeightsResult(run, Sections(weights=weights.summary() if weights is not None else None),
                             weights=weights)


__all__ = ["WeightsAnalysis", "WeightsResult"]
