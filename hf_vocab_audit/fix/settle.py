"""After the output's audit: which findings the plan left alone did the other fixes resolve?

A finding is the same finding in two audits when the same rule fires at the same place: its rule code and
its location (file, key, tensor, token), never its message. Messages carry counts and values that a fix
changes, and two findings of one rule can share a message at two places.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..core.findings import Applicability, AppliedFix, Finding, Unfixed
from .repair_plan import CheckpointRepair


def place(f: Finding) -> tuple[Any, ...]:
    """What makes two audits' findings the same one: the rule and where it fires (``Location.line`` and the
    example ids or rows a finding names are not part of it)."""
    where = f.location
    return f.code, where.file, where.key, where.tensor, where.token


def settle(plan: CheckpointRepair, after: Iterable[Finding]) -> tuple[tuple[AppliedFix, ...], tuple[Unfixed, ...]]:
    """The fixes applied, and the findings left unfixed: a finding without a fix of its own that no longer
    fires at its place in the output's audit counts as resolved by the fixes applied (when any was)."""
    remaining = {place(f) for f in after}
    fixes = list(plan.applied)
    unfixed = []
    how = Applicability.SAFE if any(a.applicability is Applicability.SAFE for a in plan.applied) else Applicability.UNSAFE
    for left in plan.unfixed:
        if plan.applied and place(left.finding) not in remaining:
            fixes.append(AppliedFix(left.code, "resolved", f"resolved by the fixes above: {left.message}", how))
        else:
            unfixed.append(left.as_unfixed())
    return tuple(sorted(fixes, key=lambda a: a.code)), tuple(unfixed)
