"""The report: findings + skipped work + errors + a facts summary, with a versioned JSON form."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .findings import AppliedFix, Finding, Severity, Skipped

SCHEMA_VERSION = "1.0"
FAIL_ON = ("error", "warning", "info", "never")


@dataclass(frozen=True)
class Report:
    target: str
    tool_version: str
    findings: tuple[Finding, ...]
    skipped: tuple[Skipped, ...] = ()
    errors: tuple[str, ...] = ()
    facts: dict[str, Any] = field(default_factory=dict)
    fixes: tuple[AppliedFix, ...] = ()
    rules_run: tuple[str, ...] = ()
    duration_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)  # per-extension sections (dataset, weights, fix)

    def counts(self) -> dict[str, int]:
        out = {s.value: 0 for s in (Severity.ERROR, Severity.WARNING, Severity.INFO)}
        for f in self.active():
            out[f.severity.value] += 1
        out["allowed"] = sum(1 for f in self.findings if f.allowed is not None)
        return out

    def active(self) -> list[Finding]:
        """Findings not accepted by an allowlist."""
        return [f for f in self.findings if f.allowed is None]

    def failing(self, fail_on: str = "error") -> list[Finding]:
        if fail_on not in FAIL_ON:
            raise ValueError(f"fail_on must be one of {FAIL_ON}")
        if fail_on == "never":
            return []
        threshold = Severity(fail_on).rank
        return [f for f in self.active() if f.severity.rank >= threshold]

    def exit_code(self, fail_on: str = "error") -> int:
        """0 when no finding is at or above ``fail_on``, else 1 (2 is for audits that could not run)."""
        return 1 if self.failing(fail_on) else 0

    def to_dict(self) -> dict[str, Any]:
        out = {
            "schema_version": SCHEMA_VERSION,
            "tool": {"name": "hf-vocab-audit", "version": self.tool_version},
            "target": self.target,
            "summary": self.counts(),
            "facts": self.facts,
            "findings": [f.to_dict() for f in self.findings],
            "fixes": [f.to_dict() for f in self.fixes],
            "skipped": [s.to_dict() for s in self.skipped],
            "errors": list(self.errors),
            "rules_run": list(self.rules_run),
            "duration_s": round(self.duration_s, 3),
        }
        out.update(self.extra)
        return out


def sort_findings(findings: list[Finding]) -> tuple[Finding, ...]:
    """Most severe first, then by code; a rule's own order is kept (stable sort)."""
    return tuple(sorted(findings, key=lambda f: (-f.severity.rank, f.code)))
