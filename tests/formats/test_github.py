"""GitHub workflow commands: one annotation per active finding, with file, line and escaped text."""

from __future__ import annotations

import dataclasses
import re

from hf_vocab_audit.formats import github

ANNOTATION = re.compile(r"^::(error|warning|notice) (?P<props>[^:]*)::(?P<body>.*)$")


def test_annotations(broken_report, broken_rel):
    lines = github.render(broken_report).splitlines()
    annotations = [ANNOTATION.match(line) for line in lines if line.startswith("::")]
    assert all(annotations) and len(annotations) == 7  # the cause first, then one per finding
    assert annotations[0]["props"].startswith("title=cause%3A 2 tokens added to the tokenizer")
    assert "%0Afix: " in annotations[0]["body"] and "--fix" in annotations[0]["body"]
    assert [a[1] for a in annotations[1:]].count("error") == 5
    props = dict(p.split("=", 1) for p in annotations[-1]["props"].split(","))
    assert props["file"] == "models/broken/config.json" and props["title"] == "HVA202 special-token-id-disagreement"
    line = (broken_rel / props["file"]).read_text().splitlines()[int(props["line"]) - 1]
    assert '"eos_token_id"' in line
    assert "\n" not in annotations[-1]["body"] and "%0Afix: " in annotations[-1]["body"]
    assert lines[-1].endswith("FAIL: 5 error(s), 1 warning(s), 0 info (fail-on error)")


def test_allowed_findings_are_not_annotated(broken_report):
    report = dataclasses.replace(broken_report, findings=tuple(
        dataclasses.replace(f, allowed="on purpose") if f.code == "HVA202" else f for f in broken_report.findings))
    text = github.render(report)
    assert "::warning" not in text
    assert "allowed HVA202 special-token-id-disagreement: on purpose" in text
