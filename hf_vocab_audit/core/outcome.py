"""The verdict of one audit, decided once: exit code, fail-on, exit-zero and counts.

The gate decides it (:func:`decide`) and attaches it to the report; every renderer and the process exit
only read it, so a report can never say FAIL while the process exits 0.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .codec import JsonForm, Shape, wire

if TYPE_CHECKING:  # the verdict's vocabulary is read before the findings model is imported
    from .findings import Finding


class FailOn(str, enum.Enum):
    """The lowest severity that fails the gate (``never``: nothing does)."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"
    NEVER = "never"


FAIL_ON = tuple(f.value for f in FailOn)
EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
VERDICTS = {EXIT_OK: "PASS", EXIT_FINDINGS: "FAIL", EXIT_ERROR: "ERROR"}
PARTIAL = "PARTIAL"  # exit 0 under --allow-partial when something the rules needed was not examined


def fail_on_value(fail_on: str | FailOn) -> FailOn:
    """``fail_on`` as a :class:`FailOn`; ValueError naming the choices otherwise."""
    try:
        return FailOn(fail_on)
    except ValueError:
        raise ValueError(f"fail_on must be one of {', '.join(FAIL_ON)}, not {fail_on!r}") from None


def count(findings: Sequence[Finding]) -> dict[str, int]:
    """Findings per severity (allowlisted ones left out) and how many the allowlist accepted."""
    from .findings import Severity

    out = {s.value: 0 for s in (Severity.ERROR, Severity.WARNING, Severity.INFO)}
    for f in findings:
        if f.allowed is None:
            out[f.severity.value] += 1
    out["allowed"] = sum(1 for f in findings if f.allowed is not None)
    return out


def failing(findings: Sequence[Finding], fail_on: str | FailOn) -> list[Finding]:
    """Findings not accepted by an allowlist at or above ``fail_on``."""
    from .findings import Severity

    level = fail_on_value(fail_on)
    if level is FailOn.NEVER:
        return []
    threshold = Severity(level.value).rank
    return [f for f in findings if f.allowed is None and f.severity.rank >= threshold]


@dataclass(frozen=True)
class Outcome(JsonForm):
    """What the gate decided: ``exit_code`` is the process exit status, ``verdict`` says it in a word.

    ``ERROR`` (exit 2): part of the audit could not run (``Report.errors``), whatever the findings and
    exit-zero say; or nothing failed but something the selected rules needed was not examined
    (``not_examined``, the report's coverage gaps) and a partial audit was not accepted: a gate never
    passes what it did not examine. Findings that fail the gate are exit 1 with or without gaps.
    ``PARTIAL`` (exit 0): gaps, accepted by ``allow_partial``, and nothing failing; never ``PASS``.
    """

    fail_on: FailOn
    exit_zero: bool
    failing: int  # findings at or above fail_on, allowlisted ones excluded (counted even under exit_zero)
    exit_code: int
    counts: dict[str, int] = field(metadata=wire(key="summary", read_only=True))  # the report writes its summary
    not_examined: int = 0  # coverage gaps (Report.coverage.not_examined)
    allow_partial: bool = False
    _codec = Shape(order=("exit_code", "verdict", "fail_on", "exit_zero", "failing", "counts", "not_examined",
                          "allow_partial"), computed={"verdict": "verdict"})

    @property
    def verdict(self) -> str:
        if self.exit_code == EXIT_OK and self.not_examined:
            return PARTIAL
        return VERDICTS[self.exit_code]

    @property
    def partial(self) -> bool:
        """Something the selected rules needed was not examined (whether or not that was accepted)."""
        return self.not_examined > 0

    @property
    def fails(self) -> bool:
        """True when the gate does not pass: findings at or above fail-on (never under exit-zero), or errors."""
        return self.exit_code != EXIT_OK

    def summary_line(self) -> str:
        """``FAIL: 2 error(s), 1 warning(s), 0 info (fail-on error)``: the same words in every format."""
        c = self.counts
        allowed = f", {c['allowed']} allowed" if c["allowed"] else ""
        waived = f", exit-zero: {self.failing} finding(s) at or above it do not fail" if self.exit_zero and self.failing else ""
        gaps = ""
        if self.not_examined:
            accepted = "accepted by --allow-partial" if self.allow_partial else "--allow-partial accepts a partial audit"
            gaps = f"{self.not_examined} part(s) NOT examined ({accepted}); "
        return (f"{self.verdict}: {gaps}{c['error']} error(s), {c['warning']} warning(s), {c['info']} info{allowed} "
                f"(fail-on {self.fail_on.value}{waived})")


def decide(findings: Sequence[Finding], fail_on: str | FailOn = FailOn.ERROR, exit_zero: bool = False,
           errors: Sequence[str] = (), not_examined: int = 0, allow_partial: bool = False) -> Outcome:
    """The one place the verdict is computed: errors are exit 2; then findings that fail the gate, exit 1;
    then gaps not accepted (something the rules needed was not examined), exit 2; else 0."""
    level = fail_on_value(fail_on)
    n = len(failing(findings, level))
    if errors:
        code = EXIT_ERROR
    elif n and not exit_zero:
        code = EXIT_FINDINGS
    elif not_examined and not allow_partial:
        code = EXIT_ERROR
    else:
        code = EXIT_OK
    return Outcome(level, exit_zero, n, code, count(findings), not_examined, allow_partial)
