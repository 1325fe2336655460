"""``--dataset``: every split streamed against the model (``dataset.outcome.scan_dataset``, one call), then the
dataset rules on the finished scan."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...core.options import AuditOptions
from ...core.scope import Scope
from ..registry import Rule
from ..runner import RuleRun, run_scope
from . import Analysis, AnalysisResult, AuditContext, Sections
from .weights import WeightsResult

if TYPE_CHECKING:
    from ...facts.trainable_rows import FrozenRows
    from ...weights.analysis import WeightFacts


class DatasetAnalysis(Analysis):
    name = "dataset"
    scope = Scope.DATASET

    def wanted(self, options: AuditOptions) -> bool:
        return options.scan is not None

    def run(self, ctx: AuditContext) -> AnalysisResult:
        from ...dataset.outcome import scan_dataset

        assert ctx.options.scan is not None
        weights = ctx.found(WeightsResult)
        frozen = _frozen_rows(weights.weights if weights is not None else None, ctx.rules)
        scanned = scan_dataset(ctx.facts, ctx.options.scan, frozen)
        run = run_scope(ctx.rules, Scope.DATASET, scanned.facts) + RuleRun(skipped=scanned.skipped)
        return AnalysisResult(run, Sections(dataset=scanned.section), scanned.splits, scanned.gaps)


def _frozen_rows(weight_facts: WeightFacts | None, rules: list[Rule]) -> FrozenRows | None:
    """The untrained rows an adapter leaves frozen, for the scan to watch, when HVA580 is selected."""
    from ..dataset_frozen import dataset_uses_frozen_untrained_row

    if weight_facts is None or not any(r.check is dataset_uses_frozen_untrained_row for r in rules):
        return None
    from ...weights.frozen import frozen_untrained

    return frozen_untrained(weight_facts)


__all__ = ["DatasetAnalysis"]
