"""``check FT --base BASE`` on a full checkpoint: the fine-tune against the checkpoint it came from (HVA840-843),
and with ``--weights`` their embedding rows (HVA844-845). A PEFT adapter's ``--base`` keeps its own meaning: the
adapter's facts are gathered against it (``facts.sources.adapter_base``), and these analyses do nothing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...core.options import AuditOptions
from ...core.scope import Scope
from ..runner import RuleRun, run_scope
from . import Analysis, AnalysisResult, AuditContext

if TYPE_CHECKING:  # read only with --base on a full checkpoint
    from ...facts.pairs import BaseFacts


@dataclass(frozen=True)
class BaseResult(AnalysisResult):
    pair: BaseFacts | None = None  # both sides' facts, for the rows analysis after it
    local: bool = False  # the base is a local folder (its rows can be read)


def _full_checkpoint(ctx: AuditContext) -> bool:
    return ctx.options.base is not None and ctx.facts.adapter is None


class BaseAnalysis(Analysis):
    name = "base"
    scope = Scope.BASE

    def wanted(self, options: AuditOptions) -> bool:
        return options.base is not None

    def run(self, ctx: AuditContext) -> BaseResult:
        if not _full_checkpoint(ctx):
            return BaseResult()
        from ...facts.pairs import compare_base
        from ...facts.sources.paired import gather_paired

        assert ctx.options.base is not None
        other = gather_paired(ctx.options.base, "--base", ctx.options.hub_timeout)
        pair = compare_base(ctx.facts, other.facts, other.ref)
        return BaseResult(run_scope(ctx.rules, Scope.BASE, pair), pair=pair, local=other.local)


class BaseRowsAnalysis(Analysis):
    name = "base-rows"
    scope = Scope.BASE_ROWS

    def wanted(self, options: AuditOptions) -> bool:
        return options.base is not None and options.weights

    def run(self, ctx: AuditContext) -> AnalysisResult:
        found = ctx.found(BaseResult)
        if found is None or found.pair is None:
            return AnalysisResult()
        pair = found.pair
        if not found.local:
            why = f"the base {pair.base_ref} is a Hub id: its rows are not downloaded (pass a local folder)"
            return AnalysisResult(run_scope(ctx.rules, Scope.BASE_ROWS, None, lambda _r: why))
        if not any(r.scope is Scope.BASE_ROWS for r in ctx.rules):
            return AnalysisResult()
        from ...weights.base_rows import compare_rows

        rows, skipped = compare_rows(pair.target, pair.base, pair.base_ref)
        if rows is None:
            why = skipped[0].reason if skipped else "no rows to compare"
            return AnalysisResult(run_scope(ctx.rules, Scope.BASE_ROWS, None, lambda _r: why))
        return AnalysisResult(RuleRun(skipped=tuple(skipped)) + run_scope(ctx.rules, Scope.BASE_ROWS, rows))


__all__ = ["BaseAnalysis", "BaseResult", "BaseRowsAnalysis"]
