"""The report's data: findings, fixes, skipped work and errors (frozen, JSON-ready)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from .codec import JsonForm, Shape, if_empty, if_none, wire
from .fixes import Applicability as Applicability
from .fixes import Fix, Verification
from .fixes import FixPlan as FixPlan
from .source import Source as Source


class Severity(str, enum.Enum):
    """How bad a finding is. Ordered: ``INFO < WARNING < ERROR``."""

    INFO = "info"
    WARNING = "warning"
    ERROR = "error"

    @property
    def rank(self) -> int:
        return _RANK[self]


_RANK = {Severity.INFO: 1, Severity.WARNING: 2, Severity.ERROR: 3}


@dataclass(frozen=True)
class Location(JsonForm):
    """Where a finding is: a file plus, as far as known, the key, tensor, token, or dataset cell."""

    file: str | None = None
    key: str | None = None
    tensor: str | None = None
    token: str | None = None
    token_id: int | None = None
    split: str | None = None
    column: str | None = None
    row: int | None = None
    position: int | None = None
    # 1-based line of ``key`` (or ``token``) in a JSON ``file``, recorded by the audit for SARIF/GitHub;
    # not part of the finding's identity (two audits find the same finding), but in its JSON form, so a
    # report read back from JSON renders the same regions.
    line: int | None = field(default=None, compare=False)
    _codec = Shape(omit_none=True)

    def __str__(self) -> str:
        parts = []
        if self.file:
            parts.append(self.file)
        for name in ("key", "tensor", "split", "column", "row", "position"):
            value = getattr(self, name)
            if value is not None:
                parts.append(f"{name}={value}")
        if self.token is not None:
            parts.append(f"token={self.token!r}" + (f" (id {self.token_id})" if self.token_id is not None else ""))
        elif self.token_id is not None:  # an id with no token (past the vocabulary): never "token=None"
            parts.append(f"token_id={self.token_id}")
        return " ".join(parts)



@dataclass(frozen=True)
class Finding(JsonForm):
    """One problem found by one rule."""

    code: str
    name: str
    severity: Severity
    message: str
    location: Location = field(default_factory=Location)
    hint: str | None = None
    fix: Fix | None = None
    details: dict[str, Any] = field(default_factory=dict)
    # reason, when an allowlist accepted this finding
    allowed: str | None = field(default=None, metadata=wire(omit=if_none))
    # the id of the report's Cause that explains this finding, if one does
    cause: str | None = field(default=None, metadata=wire(omit=if_none))


@dataclass(frozen=True)
class Skipped(JsonForm):
    """Work not done, and why (a rule whose facts are missing, a column without a role...)."""

    what: str
    reason: str
    rule: str | None = field(default=None, metadata=wire(omit=if_none))  # the rule's code, when the work is a rule

    @classmethod
    def of_rule(cls, code: str, name: str, reason: str) -> Skipped:
        return cls(f"{code} {name}", reason, rule=code)



@dataclass(frozen=True)
class AppliedFix(JsonForm):
    """A fix that ``--fix`` applied to the output checkpoint."""

    code: str
    action: str
    description: str
    applicability: Applicability


@dataclass(frozen=True)
class Unfixed(JsonForm):
    """A finding ``--fix`` leaves alone, and why."""

    code: str
    message: str
    reason: str


@dataclass(frozen=True)
class FixResult(JsonForm):
    """What ``--fix`` did beyond the fixes applied: where it wrote, how, what it left unfixed and why,
    and how the output was verified (the report's ``fix`` section)."""

    input: str
    output: str
    method: str  # "surgical", "transformers", or "copy" when no weight changed
    rows_before: int | None
    rows_after: int | None
    unfixed: tuple[Unfixed, ...] = ()
    notes: tuple[str, ...] = ()
    # None when no output was written and proved (written as {})
    verification: Verification | None = field(default=None, metadata=wire(none_as={}))
    # tensor -> token rows set to the mean of the trained rows
    reinit: dict[str, tuple[int, ...]] | None = field(default=None, metadata=wire(omit=if_empty))
