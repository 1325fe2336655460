"""The one rule runner: run the selected rules of a scope on their facts, into one :class:`RuleRun`."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.coverage import Gap
from ..core.findings import Finding, Skipped
from ..errors import AuditError
from ..facts import Facts
from ..facts.requirements import missing_fact
from .locations import with_lines
from .registry import Rule, Scope

if TYPE_CHECKING:
    from ..weights.analysis import WeightFacts


@dataclass(frozen=True)
class RuleRun:
    """What running rules produced: findings, work skipped (with reasons) and the codes that ran."""

    findings: tuple[Finding, ...] = ()
    skipped: tuple[Skipped, ...] = ()
    ran: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()  # sources that failed while the rest of the audit went on
    gaps: tuple[Gap, ...] = ()  # what another entry point of the target left unexamined (Facts.entry_points)

    def __add__(self, other: RuleRun) -> RuleRun:
        return RuleRun(self.findings + other.findings, self.skipped + other.skipped, self.ran + other.ran,
                       self.errors + other.errors, self.gaps + other.gaps)


def run_scope(rules: Iterable[Rule], scope: Scope, subject: Any,
              why_not: Callable[[Rule], str | None] | None = None) -> RuleRun:
    """Run the rules of ``scope`` on ``subject``; a rule ``why_not`` gives a reason for is skipped."""
    findings: list[Finding] = []
    skipped: list[Skipped] = []
    ran: list[str] = []
    for r in rules:
        if r.scope is not scope:
            continue
        reason = why_not(r) if why_not is not None else None
        if reason:
            skipped.append(Skipped.of_rule(r.code, r.name, reason))
            continue
        findings.extend(r.findings(subject))
        ran.append(r.code)
    return RuleRun(tuple(findings), tuple(skipped), tuple(ran))


def run_static(facts: Facts, rules: Iterable[Rule], *, lines: bool = True,
               unsupported: Mapping[str, str] | None = None) -> RuleRun:
    """The static rules: each runs when the facts it requires are there. ``lines``: record the line of
    each finding in its JSON file (for SARIF regions and GitHub annotations). ``unsupported``: rules (by code)
    whose meaning does not carry over to the facts' source (``FactsSource.unsupported``), skipped with the reason."""
    unsupported = unsupported or {}
    run = run_scope(rules, Scope.STATIC, facts, lambda r: unsupported.get(r.code) or missing_fact(facts, r.requires))
    if not lines:
        return run
    return RuleRun(with_lines(facts.model_dir, run.findings), run.skipped, run.ran)


def run_weights(facts: Facts, rules: Iterable[Rule]) -> tuple[RuleRun, WeightFacts | None]:
    """The ``--weights`` rules: gather the embedding statistics (numpy) only when one is selected.

    A matrix that cannot be read is recorded in ``RuleRun.errors`` (the report's errors: exit code 2) and
    its rules are skipped; the static findings are still reported.
    """
    chosen = [r for r in rules if r.scope is Scope.WEIGHTS]
    if not chosen:
        return RuleRun(), None
    from ..weights.analysis import gather_weights

    try:
        weights, skipped = gather_weights(facts)
    except AuditError as exc:
        reason = f"the weights analysis failed: {exc}"
        return RuleRun(errors=(f"--weights: {exc}",)) + run_scope(chosen, Scope.WEIGHTS, None, lambda _r: reason), None
    if weights is None:
        reason = skipped[0].reason if skipped else "no weights"
        return RuleRun(skipped=tuple(skipped)) + run_scope(chosen, Scope.WEIGHTS, None, lambda _r: reason), None
    return RuleRun(skipped=tuple(skipped)) + run_scope(chosen, Scope.WEIGHTS, weights), weights
