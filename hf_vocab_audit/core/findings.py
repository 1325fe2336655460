"""The report's data: findings, fixes, skipped work and errors (frozen, JSON-ready)."""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field
from typing import Any

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
class Location:
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

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Location:
        return cls(**{k: d[k] for k in (*LOCATION_KEYS, "line") if k in d})

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


LOCATION_KEYS = ("file", "key", "tensor", "token", "token_id", "split", "column", "row", "position")


@dataclass(frozen=True)
class Finding:
    """One problem found by one rule."""

    code: str
    name: str
    severity: Severity
    message: str
    location: Location = field(default_factory=Location)
    hint: str | None = None
    fix: Fix | None = None
    details: dict[str, Any] = field(default_factory=dict)
    allowed: str | None = None  # reason, when an allowlist accepted this finding
    cause: str | None = None  # the id of the report's Cause that explains this finding, if one does

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "code": self.code,
            "name": self.name,
            "severity": self.severity.value,
            "message": self.message,
            "location": self.location.to_dict(),
            "hint": self.hint,
            "fix": self.fix.to_dict() if self.fix else None,
            "details": self.details,
        }
        if self.allowed is not None:
            out["allowed"] = self.allowed
        if self.cause is not None:
            out["cause"] = self.cause
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Finding:
        fix = d.get("fix")
        return cls(d["code"], d["name"], Severity(d["severity"]), d["message"], Location.from_dict(d.get("location") or {}),
                   d.get("hint"), Fix.from_dict(fix) if fix else None, dict(d.get("details") or {}),
                   d.get("allowed"), d.get("cause"))


@dataclass(frozen=True)
class Skipped:
    """Work not done, and why (a rule whose facts are missing, a column without a role...)."""

    what: str
    reason: str
    rule: str | None = None  # the rule's code, when the work not done is a rule

    @classmethod
    def of_rule(cls, code: str, name: str, reason: str) -> Skipped:
        return cls(f"{code} {name}", reason, rule=code)

    def to_dict(self) -> dict[str, str]:
        out = {"what": self.what, "reason": self.reason}
        if self.rule is not None:
            out["rule"] = self.rule
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Skipped:
        return cls(d["what"], d["reason"], d.get("rule"))


@dataclass(frozen=True)
class AppliedFix:
    """A fix that ``--fix`` applied to the output checkpoint."""

    code: str
    action: str
    description: str
    applicability: Applicability

    def to_dict(self) -> dict[str, str]:
        return {
            "code": self.code,
            "action": self.action,
            "description": self.description,
            "applicability": self.applicability.value,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> AppliedFix:
        return cls(d["code"], d["action"], d["description"], Applicability(d["applicability"]))


@dataclass(frozen=True)
class Unfixed:
    """A finding ``--fix`` leaves alone, and why."""

    code: str
    message: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message, "reason": self.reason}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Unfixed:
        return cls(d["code"], d["message"], d["reason"])


@dataclass(frozen=True)
class FixResult:
    """What ``--fix`` did beyond the fixes applied: where it wrote, how, what it left unfixed and why,
    and how the output was verified (the report's ``fix`` section)."""

    input: str
    output: str
    method: str  # "surgical", "transformers", or "copy" when no weight changed
    rows_before: int | None
    rows_after: int | None
    unfixed: tuple[Unfixed, ...] = ()
    notes: tuple[str, ...] = ()
    verification: Verification | None = None  # None when no output was written and proved
    reinit: dict[str, tuple[int, ...]] | None = None  # tensor -> token rows set to the mean of the trained rows

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "input": self.input,
            "output": self.output,
            "method": self.method,
            "rows_before": self.rows_before,
            "rows_after": self.rows_after,
            "unfixed": [u.to_dict() for u in self.unfixed],
            "notes": list(self.notes),
            "verification": self.verification.to_dict() if self.verification is not None else {},
        }
        if self.reinit:
            out["reinit"] = {name: list(ids) for name, ids in self.reinit.items()}
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> FixResult:
        reinit = d.get("reinit")
        return cls(d["input"], d["output"], d["method"], d.get("rows_before"), d.get("rows_after"),
                   tuple(Unfixed.from_dict(u) for u in d.get("unfixed", ())), tuple(d.get("notes", ())),
                   Verification.from_dict(d["verification"]) if d.get("verification") else None,
                   {name: tuple(ids) for name, ids in reinit.items()} if reinit else None)
