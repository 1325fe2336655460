"""The report: findings + skipped work + errors + a facts summary, with a versioned JSON form (``core.codec``)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from html import escape
from typing import Any

from ..errors import printable
from .causes import Cause
from .codec import CodecError, JsonForm, Shape, encode_object, wire
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
TOOL = "hf-vocab-audit"
# The typed optional sections (core.sections), by their JSON key and Report field name.
SECTIONS = frozenset({"weights", "dataset", "vllm", "gguf_source"})


def _tool_version(value: Any, where: str) -> str:
    """The ``tool`` object's version (the report's ``tool_version``)."""
    version = value.get("version") if isinstance(value, dict) else None
    if not isinstance(version, str):
        raise CodecError(f"{where}.version has the wrong type: {version!r}"[:200])
    return version


_TOOL = wire(key="tool", encode=lambda version: {"name": TOOL, "version": version}, decode=_tool_version,
             schema={"type": "object", "required": ["name", "version"], "additionalProperties": False,
                     "properties": {"name": {"const": TOOL}, "version": {"type": "string"}}})


@dataclass(frozen=True, repr=False)
class Report(JsonForm):
    target: str
    tool_version: str = field(metadata=_TOOL)
    findings: tuple[Finding, ...]
    skipped: tuple[Skipped, ...] = ()
    errors: tuple[str, ...] = ()
    facts: dict[str, Any] = field(default_factory=dict)
    fixes: tuple[AppliedFix, ...] = ()
    rules_run: tuple[str, ...] = ()
    duration_s: float = field(default=0.0, metadata=wire(encode=lambda s: round(s, 3)))
    # sections this version does not know (a newer report's): every top-level key no field claims
    extra: dict[str, Any] = field(default_factory=dict, metadata=wire(rest=True))
    fix: FixResult | None = None  # what --fix did (hf_vocab_audit.fix)
    source: Source = Source.FOLDER  # a folder target's files are paths from the repository root
    # decided by the gate (hf_vocab_audit.gate); renderers only read it. Written flat at the end, as the
    # verdict() states it (an unjudged report: the default gate's)
    outcome: Outcome | None = field(default=None, metadata=wire(flatten=True, get="verdict"))
    coverage: Coverage = field(default_factory=Coverage)  # what was examined, and the gaps
    causes: tuple[Cause, ...] = ()  # root causes; each finding they explain names one (Finding.cause)
    weights: WeightsSection | None = None  # --weights: the embedding matrices' row statistics
    dataset: DatasetSection | None = None  # --dataset: what the scan read, per split and column
    vllm: VllmSection | None = None  # --target vllm: the ids to suppress
    gguf_source: str | None = None  # a GGUF audit's --source folder
    _codec = Shape(order=("schema_version", "tool_version", "target", "summary", "facts", "findings", "fixes",
                          "skipped", "errors", "rules_run", "duration_s", "coverage", "causes", "source", "fix",
                          "weights", "dataset", "vllm", "gguf_source", "extra", "outcome"),
                   computed={"schema_version": "schema_version", "summary": "counts"}, omit_none=True)

    @property
    def schema_version(self) -> str:
        """The JSON form's version (:data:`SCHEMA_VERSION`)."""
        return SCHEMA_VERSION

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
        """The JSON form (``check --format json``): ``Report.from_dict(r.to_dict()) == r`` for a judged report
        (an unjudged one comes back with the default verdict it stated), so every renderer can work from the
        JSON alone."""
        return encode_object(self)


def sort_findings(findings: list[Finding]) -> tuple[Finding, ...]:
    """Most severe first, then by code; a rule's own order is kept (stable sort)."""
    return tuple(sorted(findings, key=lambda f: (-f.severity.rank, f.code)))
