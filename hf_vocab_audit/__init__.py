"""hf-vocab-audit: find the index bugs behind `device-side assert triggered` before a GPU does.

    from hf_vocab_audit import audit
    report = audit("path/to/model")                      # or audit(model=model, tokenizer=tokenizer)
    for finding in report.findings:
        print(finding.code, finding.message)
"""

from __future__ import annotations

from .audit import audit  # noqa: E402
from .core.findings import Applicability, Finding, FixPlan, FixResult, Location, Severity, Skipped  # noqa: E402
from .core.fixes import Fix, FixAvailability  # noqa: E402
from .core.outcome import FailOn, Outcome  # noqa: E402
from .core.report import SCHEMA_VERSION, Report  # noqa: E402
from .errors import AuditError  # noqa: E402
from .facts import Facts, facts_from_memory  # noqa: E402
from .formats import render  # noqa: E402,F401  # also lets a report print itself (str, a notebook cell)
from .guard import BatchIndexError, PreflightError, guard, guard_trainer  # noqa: E402
from .version import __version__  # noqa: E402

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
