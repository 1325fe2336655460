"""SARIF 2.1.0 for code scanning (GitHub, GitLab, Azure DevOps): rules with help, results with locations."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..core.findings import Finding
from ..core.report import Report
from .escape import finite, hidden, shown
from .locate import (
    SEVERITY_WORD,
    artifact_path,
    fingerprint,
    local_folder,
    rule_codes,
    rule_for,
    skipped_rules,
)

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
INFO_URI = "https://pypi.org/project/hf-vocab-audit/"


def _rule(code: str) -> dict[str, Any]:
    r = rule_for(code)
    if r is None:  # a finding from a rule this installation does not know (should not happen)
        return {"id": code}
    help_text = f"{r.summary}\n\nWhy it matters:\n{r.why}\n\nHow to fix:\n{r.how_to_fix}"
    help_md = f"{r.summary}\n\n**Why it matters**\n\n{r.why}\n\n**How to fix**\n\n{r.how_to_fix}"
    return {
        "id": r.code,
        "name": r.name,
        "shortDescription": {"text": r.summary},
        "fullDescription": {"text": r.why.split("\n\n")[0].replace("\n", " ")},
        "help": {"text": help_text, "markdown": help_md},
        "defaultConfiguration": {"level": SEVERITY_WORD[r.severity]},
        "properties": {"tags": ["hf-vocab-audit", r.scope], "scope": r.scope},
    }


def _fs_bytes(path: str) -> bytes:
    """The file system's own bytes of a name, as os.fsencode gives them; a lone surrogate that is not one
    of an undecodable byte (a hostile string) is encoded as it stands instead of failing."""
    try:
        return path.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return path.encode("utf-8", "surrogatepass")


def _file_uri(path: str) -> str:
    """``file://`` URI of an absolute path, as ``Path.as_uri`` writes it; a name holding a lone surrogate
    (undecodable bytes from the file system, or a hostile string) is percent-encoded instead of failing."""
    from urllib.parse import quote

    return "file://" + quote(_fs_bytes(path), safe="/")


def _uri(uri: str) -> str:
    """A URI with its hidden characters (a bidi override or zero-width space in a file name) percent-encoded:
    RFC 3987 bars bidi formatting characters from IRIs, and a viewer would otherwise display them."""
    if not any(hidden(ch) for ch in uri):
        return uri
    from urllib.parse import quote

    return "".join(quote(_fs_bytes(ch), safe="") if hidden(ch) else ch for ch in uri)


def _displayed(value: Any, key: str = "") -> Any:
    """``value`` with every string a viewer shows escaped for reading (:func:`shown`; URIs percent-encoded):
    code-scanning pages display messages, tensor names and allowlist reasons as they are."""
    if isinstance(value, str):
        return _uri(value) if key == "uri" else shown(value)
    if isinstance(value, dict):
        return {shown(k): _displayed(v, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_displayed(v) for v in value]
    return value


def _location(report: Report, f: Finding) -> dict[str, Any] | None:
    uri = artifact_path(report, f.location.file)
    if uri is None:
        return None
    physical: dict[str, Any] = {"artifactLocation": {"uri": uri}}
    if local_folder(report) and not Path(report.target).is_absolute():
        physical["artifactLocation"]["uriBaseId"] = "%SRCROOT%"
    elif local_folder(report):
        physical["artifactLocation"]["uri"] = _file_uri(uri)
    line = f.location.line
    if line is not None:
        physical["region"] = {"startLine": line}
    out: dict[str, Any] = {"physicalLocation": physical}
    logical = [
        {"name": value, "kind": kind}
        for value, kind in ((f.location.tensor, "tensor"), (f.location.key, "key"))
        if value
    ]
    if logical:
        out["logicalLocations"] = logical
    return out


def _result(report: Report, f: Finding, index: dict[str, int]) -> dict[str, Any]:
    text = f.message + (f" Fix: {f.hint}" if f.hint else "")
    out: dict[str, Any] = {
        "ruleId": f.code,
        "ruleIndex": index[f.code],
        "level": SEVERITY_WORD[f.severity],
        "message": {"text": text},
    }
    loc = _location(report, f)
    if loc is not None:
        out["locations"] = [loc]
    out["partialFingerprints"] = {"hfVocabAudit/v1": fingerprint(f)}
    if f.allowed is not None:
        out["suppressions"] = [{"kind": "external", "status": "accepted", "justification": f.allowed}]
    props: dict[str, Any] = {"where": f.location.to_dict()}
    if f.fix is not None:
        props["fix"] = f.fix.to_dict()
    if f.cause is not None:
        props["cause"] = f.cause
    out["properties"] = props
    return out


def to_sarif(report: Report) -> dict[str, Any]:
    outcome = report.verdict()
    codes = rule_codes(report)
    index = {code: i for i, code in enumerate(codes)}
    skipped = skipped_rules(report)
    notes = [
        {"level": "note", "message": {"text": f"skipped: {reason}"}, "descriptor": {"id": code, "index": index[code]}}
        for code, reason in skipped.items()
    ]
    notes += [{"level": "error", "message": {"text": err}} for err in report.errors]
    gap_level = "warning" if outcome.allow_partial else "error"
    notes += [{"level": gap_level, "message": {"text": f"not examined: {g.what}: {g.reason}"}}
              for g in report.coverage.not_examined]
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "hf-vocab-audit",
                "version": report.tool_version,
                "informationUri": INFO_URI,
                "rules": [_rule(c) for c in codes],
            }
        },
        "invocations": [
            {
                "executionSuccessful": not report.errors and (outcome.allow_partial or not outcome.partial),
                "exitCode": outcome.exit_code,
                "toolConfigurationNotifications": notes,
                "properties": {"target": report.target, "failOn": outcome.fail_on.value,
                               "exitZero": outcome.exit_zero, "verdict": outcome.verdict,
                               "allowPartial": outcome.allow_partial, "coverage": report.coverage.to_dict()},
            }
        ],
        "results": [_result(report, f, index) for f in report.findings],
        "properties": {"facts": report.facts, "summary": outcome.counts,
                       "causes": [c.to_dict() for c in report.causes]},
    }
    if local_folder(report) and not Path(report.target).is_absolute():
        run["originalUriBaseIds"] = {"%SRCROOT%": {"description": {"text": "The repository root."}}}
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [_displayed(run)]}


def render(report: Report) -> str:
    return json.dumps(finite(to_sarif(report)), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
