"""Shared by the CI formats: where a finding is in the repository, and what its rule says."""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path, PurePosixPath

from ..core.findings import Finding, Severity, Source
from ..core.report import Report
from ..rules import Rule, get_rule

SEVERITY_WORD = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def local_folder(report: Report) -> bool:
    """True when the target is a local folder (its files are paths from the repository root)."""
    return report.source is Source.FOLDER


def artifact_path(report: Report, file: str | None) -> str | None:
    """``file`` as a path from the repository root: ``TARGET/file`` (posix), or ``file`` for a Hub target.

    None for an object of an in-memory audit (``<model>``): it is no file a CI annotation could point at.
    """
    if not file or file.startswith("<"):
        return None
    if not local_folder(report):
        return file
    joined = PurePosixPath(Path(report.target).as_posix()) / file
    parts = [p for p in joined.parts if p != "."]
    return str(PurePosixPath(*parts)) if parts else file


def fingerprint(finding: Finding) -> str:
    """A stable identity for a finding across runs (code + where), for code-scanning de-duplication."""
    loc = finding.location
    key = "|".join(str(x) for x in (finding.code, loc.file, loc.key, loc.tensor, loc.token, loc.token_id))
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:32]  # a lone surrogate in a name


@cache
def rule_for(code: str) -> Rule | None:
    return get_rule(code)


def rule_codes(report: Report) -> list[str]:
    """Every rule the report speaks of: run, skipped, or with findings; sorted."""
    codes = set(report.rules_run) | {f.code for f in report.findings}
    codes |= {s.rule for s in report.skipped if s.rule is not None}
    return sorted(codes)


def skipped_rules(report: Report) -> dict[str, str]:
    """Rule code -> why it was skipped."""
    return {s.rule: s.reason for s in report.skipped if s.rule is not None}



