"""JUnit XML: one test case per rule (run or skipped); findings at/above --fail-on are failures."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from ..core.findings import Finding
from ..core.report import Report
from .escape import xml_text
from .locate import artifact_path, rule_codes, rule_for, skipped_rules


def _describe(f: Finding, report: Report) -> str:
    lines = [f"{f.severity.value.upper()} {f.code} {f.name}: {f.message}"]
    if str(f.location):
        lines.append(f"  at {f.location}")
    cause = next((c for c in report.causes if c.id == f.cause), None)
    if cause is not None:
        lines.append(f"  cause ({cause.id}): {cause.title}; fix: {cause.fix}")
    if f.hint:
        lines.append(f"  fix: {f.hint}")
    if f.allowed is not None:
        lines.append(f"  allowed: {f.allowed}")
    return "\n".join(lines)


def render(report: Report) -> str:
    outcome = report.verdict()
    failing = {id(f) for f in report.gate_failures()}
    skipped = skipped_rules(report)
    codes = rule_codes(report)
    suite = ET.Element("testsuite", name=f"hf-vocab-audit {report.target}")
    props = ET.SubElement(suite, "properties")
    for name, value in (("target", report.target), ("tool_version", report.tool_version), ("fail_on", outcome.fail_on.value),
                        ("exit_zero", str(outcome.exit_zero).lower()), ("exit_code", str(outcome.exit_code)), ("verdict", outcome.verdict)):
        ET.SubElement(props, "property", name=name, value=value)
    n_fail = n_skip = 0
    for code in codes:
        r = rule_for(code)
        name = f"{code} {r.name}" if r else code
        findings = [f for f in report.findings if f.code == code]
        case = ET.SubElement(suite, "testcase", classname="hf_vocab_audit", name=name, time="0")
        file = next((artifact_path(report, f.location.file) for f in findings if f.location.file), None)
        if file:
            case.set("file", file)
        failed = [f for f in findings if id(f) in failing]
        if failed:
            n_fail += 1
            more = f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
            failure = ET.SubElement(case, "failure", type=code, message=failed[0].message + more)
            failure.text = "\n\n".join(_describe(f, report) for f in failed)
        elif code in skipped:
            n_skip += 1
            ET.SubElement(case, "skipped", message=skipped[code])
        quiet = [f for f in findings if id(f) not in failing]
        if quiet:
            ET.SubElement(case, "system-out").text = "\n\n".join(_describe(f, report) for f in quiet)
    errors = 0
    for err in report.errors:
        errors += 1
        case = ET.SubElement(suite, "testcase", classname="hf_vocab_audit", name="audit", time="0")
        ET.SubElement(case, "error", message=err)
    gap_skips = 0
    for g in report.coverage.not_examined:  # a gap fails closed (an error) unless a partial audit was accepted
        case = ET.SubElement(suite, "testcase", classname="hf_vocab_audit", name=f"not examined: {g.what}", time="0")
        if outcome.allow_partial:
            n_skip += 1
            gap_skips += 1
            ET.SubElement(case, "skipped", message=f"not examined (--allow-partial): {g.reason}")
        else:
            errors += 1
            ET.SubElement(case, "error", message=f"not examined: {g.reason}")
    suite.set("tests", str(len(codes) + errors + gap_skips))
    suite.set("failures", str(n_fail))
    suite.set("errors", str(errors))
    suite.set("skipped", str(n_skip))
    suite.set("time", "0")
    root = ET.Element("testsuites", name="hf-vocab-audit", tests=suite.get("tests", "0"),
                      failures=str(n_fail), errors=str(errors), skipped=str(n_skip), time="0")
    root.append(suite)
    for element in root.iter():  # tensor names and token strings may hold characters XML forbids
        element.text = xml_text(element.text) if element.text else element.text
        for key, value in element.attrib.items():
            element.set(key, xml_text(value))
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
