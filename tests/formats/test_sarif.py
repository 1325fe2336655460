"""SARIF 2.1.0: parsed by sarif-pydantic with no unknown properties, rules with help, located results."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from pydantic import BaseModel
from sarif_pydantic import Sarif
from sarif_pydantic.sarif import Notification

from hf_vocab_audit.formats import sarif

# SARIF 2.1.0 invocation properties (spec 3.20.21, 3.20.14) that sarif-pydantic's Invocation lacks.
SPEC_ONLY = {"exitCode": int, "toolConfigurationNotifications": Notification}


def unknown_properties(model: object, path: str = "$") -> list[str]:
    """Fields the SARIF object model does not define (outside free-form ``properties`` bags)."""
    out: list[str] = []
    if isinstance(model, BaseModel):
        for key, value in (model.model_extra or {}).items():
            kind = SPEC_ONLY.get(key)
            if key == "$schema" or (kind is int and isinstance(value, int)):
                continue
            if kind is Notification and isinstance(value, list):
                out += unknown_properties([Notification.model_validate(v) for v in value], f"{path}.{key}")
                continue
            out.append(f"{path}.{key}")
        for name in type(model).model_fields:
            if name != "properties":
                out += unknown_properties(getattr(model, name), f"{path}.{name}")
    elif isinstance(model, list):
        for i, item in enumerate(model):
            out += unknown_properties(item, f"{path}[{i}]")
    elif isinstance(model, dict):
        for k, v in model.items():
            out += unknown_properties(v, f"{path}.{k}")
    return out


def test_sarif_validates_and_uses_only_spec_properties(broken_report):
    data = json.loads(sarif.render(broken_report))
    log = Sarif.model_validate(data)
    assert log.version == "2.1.0"
    assert unknown_properties(log) == []


def test_every_rule_has_help_and_results_point_at_lines(broken_report, broken_rel):
    run = json.loads(sarif.render(broken_report))["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == sorted(broken_report.rules_run)
    hva101 = next(r for r in rules if r["id"] == "HVA101")
    assert "Why it matters" in hva101["help"]["text"] and "resize_token_embeddings" in hva101["help"]["text"]
    assert len(run["results"]) == len(broken_report.findings) == 6
    for res in run["results"]:
        assert rules[res["ruleIndex"]]["id"] == res["ruleId"]
    by_code = {r["ruleId"]: r for r in run["results"]}
    loc = by_code["HVA202"]["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"] == {"uri": "models/broken/config.json", "uriBaseId": "%SRCROOT%"}
    line = (broken_rel / "models/broken/config.json").read_text().splitlines()[loc["region"]["startLine"] - 1]
    assert '"eos_token_id"' in line
    weights = by_code["HVA101"]["locations"][0]
    assert weights["physicalLocation"]["artifactLocation"]["uri"] == "models/broken/model.safetensors"
    assert "region" not in weights["physicalLocation"]  # a binary file has no lines
    assert {"name": "model.embed_tokens.weight", "kind": "tensor"} in weights["logicalLocations"]


def test_allowed_finding_is_an_accepted_suppression(broken_report):
    f = next(f for f in broken_report.findings if f.code == "HVA202")
    report = dataclasses.replace(broken_report, findings=tuple(
        dataclasses.replace(x, allowed="intentional") if x is f else x for x in broken_report.findings))
    res = next(r for r in json.loads(sarif.render(report))["runs"][0]["results"] if r["ruleId"] == "HVA202")
    assert res["suppressions"] == [{"kind": "external", "status": "accepted", "justification": "intentional"}]


def test_absolute_target_uses_file_uris(broken_rel):
    from hf_vocab_audit import audit

    report = audit(broken_rel / "models" / "broken")
    res = json.loads(sarif.render(report))["runs"][0]["results"][0]
    uri = res["locations"][0]["physicalLocation"]["artifactLocation"]
    assert uri["uri"].startswith("file:///") and "uriBaseId" not in uri
    assert Path(uri["uri"].removeprefix("file://")).is_file()
