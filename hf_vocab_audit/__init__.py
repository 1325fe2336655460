"""hf-vocab-audit: find the index bugs behind `device-side assert triggered` before a GPU does.

    from hf_vocab_audit import audit
    report = audit("path/to/model")                      # or audit(model=model, tokenizer=tokenizer)
    for finding in report.findings:
        print(finding.code, finding.message)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# ``audit`` and ``guard`` are also the names of submodules: bound here, first, so that importing those
# submodules later never puts a module where the function is. Everything else is imported on first use
# (PEP 562): `hf-vocab-audit check` reads the tokenizer before the report and rule modules are imported,
# and their imports overlap the tokenizer's id proof, which runs on other threads meanwhile.
from .audit import audit  # noqa: E402
from .errors import AuditError  # noqa: E402
from .formats import render  # noqa: E402,F401  # also lets a report print itself (str, a notebook cell)
from .guard import BatchIndexError, PreflightError, guard, guard_trainer  # noqa: E402
from .version import __version__  # noqa: E402

_LAZY = frozenset({"Applicability", "Finding", "FixPlan", "FixResult", "Location", "Severity", "Skipped", "Fix",
                   "FixAvailability", "FailOn", "Outcome", "SCHEMA_VERSION", "Report", "Facts", "facts_from_memory"})

if TYPE_CHECKING:
    from .core.findings import Applicability, Finding, FixPlan, FixResult, Location, Severity, Skipped
    from .core.fixes import Fix, FixAvailability
    from .core.outcome import FailOn, Outcome
    from .core.report import SCHEMA_VERSION, Report
    from .facts import Facts, facts_from_memory


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import facts
    from .core import findings, fixes, outcome, report

    for module in (findings, fixes, outcome, report, facts):
        if hasattr(module, name):
            value = getattr(module, name)
            globals()[name] = value
            return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "SCHEMA_VERSION",
    "Applicability",
    "AuditError",
    "BatchIndexError",
    "Facts",
    "FailOn",
    "Finding",
    "Fix",
    "FixAvailability",
    "FixPlan",
    "FixResult",
    "Location",
    "Outcome",
    "PreflightError",
    "Report",
    "Severity",
    "Skipped",
    "__version__",
    "audit",
    "facts_from_memory",
    "guard",
    "guard_trainer",
]
