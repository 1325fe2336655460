"""The report: findings + skipped work + errors + a facts summary, with a versioned JSON form."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from html import escape
from typing import Any

from ..errors import printable
from .causes import Cause
from .coverage import Coverage
from .display import DISPLAY
from .findings import AppliedFix, Finding, FixResult, Skipped, Source
from .outcome import EXIT_FINDINGS, FAIL_ON, FailOn, Outcome, count, decide, failing
from .sections import DatasetSection, VllmSection, WeightsSection

# 1.1: ``exit_code`` is the process exit status (0 under exit-zero); ``verdict``, ``exit_zero`` and ``failing``
# were added; skipped entries may name their ``rule``.
# 1.2: ``coverage`` (what was examined and what was not), ``not_examined`` and ``allow_partial``; the verdict
# may be ``PARTIAL``; ``causes``, and a finding's optional ``cause``.
SCHEMA_VERSION = "1.3"  # 1.3: a finding's fix is typed edits (fix.edits[].kind), not action + params
__all__ = ["FAIL_ON", "SCHEMA_VERSION", "SECTIONS", "Report", "sort_findings"]
# The JSON keys of the report itself; any other top-level key is an extension section (Report.extra).
CORE_KEYS = frozenset({"schema_version", "tool", "target", "summary", "facts", "findings", "fixes", "skipped",
                       "errors", "rules_run", "duration_s", "coverage", "causes", "source", "fix",
                       "exit_code", "verdict", "fail_on", "exit_zero", "failing", "not_examined", "allow_partial",
                       "weights", "dataset", "vllm", "gguf_source"})
# The typed optional sections (core.sections), by their JSON key and Report field name.
SECTIONS = frozenset({"weights", "dataset", "vllm", "gguf_source"})


@dataclass(frozen=True, repr=False)
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
    extra: dict[str, Any] = field(default_factory=dict)  # sections this version does not know (a newer report's)
    fix: FixResult | None = None  # what --fix did (hf_vocab_audit.fix)
    source: Source = Source.FOLDER  # a folder target's files are paths from the repository root
    outcome: Outcome | None = None  # decided by the gate (hf_vocab_audit.gate); renderers only read it
    coverage: Coverage = field(default_factory=Coverage)  # what was examined, and the gaps
    causes: tuple[Cause, ...] = ()  # root causes; each finding they explain names one (Finding.cause)
    weights: WeightsSection | None = None  # --weights: the embedding matrices' row statistics
    dataset: DatasetSection | None = None  # --dataset: what the scan read, per split and column
    vllm: VllmSection | None = None  # --target vllm: the ids to suppress
    gguf_source: str | None = None  # a GGUF audit's --source folder

    def active_causes(self) -> list[Cause]:
        """Causes that explain at least one finding no allowlist accepted, in report order."""
        ids = {f.cause for f in self.active() if f.cause is not None}
        return [c for c in self.causes if c.id in ids]

    @property
    def not_examined(self) -> int:
        return len(self.coverage.not_examined)

    def counts(self) -> dict[str, int]:
        return count(self.findings)

    def summary(self) -> str:
        """The verdict in one line: ``models/x: FAIL: 5 error(s), 1 warning(s), 0 info (fail-on error)``."""
        return f"{self.target}: {self.verdict().summary_line()}"

    def __str__(self) -> str:
        """The text report (as ``check`` prints it, without colour)."""
        show = DISPLAY.get("text")
        return show(self) if show is not None else self.summary()

    def __repr__(self) -> str:
        return f"<Report {self.summary()}>"

    def _repr_html_(self) -> str:
        """A notebook cell's view: the HTML report's body, plots inline, no external files."""
        show = DISPLAY.get("html")
        if show is not None:
            return show(self)
        text = printable(self.summary(), keep="\n")  # a bidi override in a name shows, instead of reordering
        return f"<pre>{escape(text)}</pre>"

    def active(self) -> list[Finding]:
        """Findings not accepted by an allowlist."""
        return [f for f in self.findings if f.allowed is None]

    def failing(self, fail_on: str | FailOn = FailOn.ERROR) -> list[Finding]:
        return failing(self.findings, fail_on)

    def exit_code(self, fail_on: str | FailOn = FailOn.ERROR, allow_partial: bool = False) -> int:
        """0 when no finding is at or above ``fail_on``, else 1; 2 when part of the audit could not run or,
        unless ``allow_partial``, something the selected rules needed was not examined."""
        return decide(self.findings, fail_on, errors=self.errors, not_examined=self.not_examined,
                      allow_partial=allow_partial).exit_code

    def judged(self, fail_on: str | FailOn = FailOn.ERROR, exit_zero: bool = False,
               allow_partial: bool = False) -> Report:
        """This report with its :class:`Outcome` decided and attached."""
        return replace(self, outcome=decide(self.findings, fail_on, exit_zero, self.errors, self.not_examined,
                                            allow_partial))

    def verdict(self) -> Outcome:
        """The attached outcome; a report nobody judged (a library ``audit()``) gets the default gate's."""
        if self.outcome is not None:
            return self.outcome
        return decide(self.findings, errors=self.errors, not_examined=self.not_examined)

    def gate_failures(self) -> list[Finding]:
        """The findings that fail the gate: none when it passes (exit-zero included)."""
        outcome = self.verdict()
        return self.failing(outcome.fail_on) if outcome.exit_code == EXIT_FINDINGS else []

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
            "coverage": self.coverage.to_dict(),
            "causes": [c.to_dict() for c in self.causes],
            "source": self.source.value,
        }
        if self.fix is not None:
            out["fix"] = self.fix.to_dict()
        if self.weights is not None:
            out["weights"] = self.weights.to_dict()
        if self.dataset is not None:
            out["dataset"] = self.dataset.to_dict()
        if self.vllm is not None:
            out["vllm"] = self.vllm.to_dict()
        if self.gguf_source is not None:
            out["gguf_source"] = self.gguf_source
        out.update(self.extra)
        out.update(self.verdict().to_dict())
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Report:
        """The report a JSON form describes: ``Report.from_dict(report.to_dict()) == report`` for a judged
        report (an unjudged one comes back with the default verdict it stated), so every renderer can work
        from the JSON alone."""
        fix, weights, dataset, vllm = d.get("fix"), d.get("weights"), d.get("dataset"), d.get("vllm")
        extra = {k: v for k, v in d.items() if k not in CORE_KEYS}
        return cls(
            target=d["target"], tool_version=d["tool"]["version"],
            findings=tuple(Finding.from_dict(f) for f in d.get("findings", ())),
            skipped=tuple(Skipped.from_dict(s) for s in d.get("skipped", ())),
            errors=tuple(d.get("errors", ())), facts=dict(d.get("facts") or {}),
            fixes=tuple(AppliedFix.from_dict(f) for f in d.get("fixes", ())),
            rules_run=tuple(d.get("rules_run", ())), duration_s=float(d.get("duration_s", 0.0)), extra=extra,
            fix=FixResult.from_dict(fix) if fix else None, source=Source(d.get("source", Source.FOLDER.value)),
            outcome=Outcome.from_dict(d, d["summary"]),
            coverage=Coverage.from_dict(d["coverage"]) if "coverage" in d else Coverage(),
            causes=tuple(Cause.from_dict(c) for c in d.get("causes", ())),
            weights=WeightsSection.from_dict(weights) if weights is not None else None,
            dataset=DatasetSection.from_dict(dataset) if dataset is not None else None,
            vllm=VllmSection.from_dict(vllm) if vllm is not None else None, gguf_source=d.get("gguf_source"),
        )


def sort_findings(findings: list[Finding]) -> tuple[Finding, ...]:
    """Most severe first, then by code; a rule's own order is kept (stable sort)."""
    return tuple(sorted(findings, key=lambda f: (-f.severity.rank, f.code)))
