"""Shared by the CI formats: where a finding is in the repository, and what its rule says."""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path, PurePosixPath

from ..facts.jsonfile import json_line_of_key
from ..findings import Finding, Location, Severity
from ..report import Report
from ..rules import Rule, get_rule

SEVERITY_WORD = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def local_folder(report: Report) -> Path | None:
    """The audited folder when the target is a local folder (Hub targets have none)."""
    folder = Path(report.target)
    return folder if folder.is_dir() else None


def artifact_path(report: Report, file: str | None) -> str | None:
    """``file`` as a path from the repository root: ``TARGET/file`` (posix), or ``file`` for a Hub target.

    None for an object of an in-memory audit (``<model>``): it is no file a CI annotation could point at.
    """
    if not file or file.startswith("<"):
        return None
    if local_folder(report) is None:
        return file
    joined = PurePosixPath(Path(report.target).as_posix()) / file
    parts = [p for p in joined.parts if p != "."]
    return str(PurePosixPath(*parts)) if parts else file


def line_of(report: Report, location: Location) -> int | None:
    """1-based line of the location's key (or token) in a JSON file of a local target."""
    folder = local_folder(report)
    if folder is None or not location.file or not location.file.endswith(".json"):
        return None
    path = folder / location.file
    if not path.is_file():
        return None
    if location.key:
        line = json_line_of_key(path, location.key.split(".")[-1])
        if line is not None:
            return line
    if location.token:
        return json_line_of_key(path, location.token)
    return None


def fingerprint(finding: Finding) -> str:
    """A stable identity for a finding across runs (code + where), for code-scanning de-duplication."""
    loc = finding.location
    key = "|".join(str(x) for x in (finding.code, loc.file, loc.key, loc.tensor, loc.token, loc.token_id))
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


@cache
def rule_for(code: str) -> Rule | None:
    return get_rule(code)


def rule_codes(report: Report) -> list[str]:
    """Every rule the report speaks of: run, skipped, or with findings; sorted."""
    codes = set(report.rules_run) | {f.code for f in report.findings}
    codes |= {s.what.split()[0] for s in report.skipped if s.what.startswith("HVA")}
    return sorted(codes)


def skipped_rules(report: Report) -> dict[str, str]:
    """Rule code -> why it was skipped."""
    return {s.what.split()[0]: s.reason for s in report.skipped if s.what.startswith("HVA")}


def verdict(report: Report, fail_on: str) -> str:
    return "FAIL" if report.exit_code(fail_on) else "PASS"


def summary_line(report: Report, fail_on: str) -> str:
    c = report.counts()
    allowed = f", {c['allowed']} allowed" if c["allowed"] else ""
    return (
        f"{verdict(report, fail_on)}: {c['error']} error(s), {c['warning']} warning(s), {c['info']} info"
        f"{allowed} (fail-on {fail_on})"
    )
