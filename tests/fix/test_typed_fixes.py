"""Typed fixes: every edit round-trips through the report's JSON, and the planner merges edits by their type
(two grows -> the larger; a config vocab_size set and a grow -> one consistent row count)."""

from __future__ import annotations

import json

import pytest
from builders import make_model, make_tokenizer

from hf_vocab_audit.core.findings import Finding, Location, Severity
from hf_vocab_audit.core.fixes import (
    EDIT_KINDS,
    EDIT_TYPES,
    AddStopId,
    Applicability,
    CopyBaseChatTemplate,
    CopyBaseRows,
    Fix,
    GrowBias,
    GrowRows,
    ReinitRows,
    SetConfigVocabSize,
    SetJsonKey,
    SetPadToken,
    SetSpecialTokenId,
    SuppressTokens,
    WriteChatTemplate,
    edit_from_dict,
)
from hf_vocab_audit.core.report import Report
from hf_vocab_audit.facts import gather
from hf_vocab_audit.fix import make_plan

ONE_OF_EACH = (
    GrowRows(106, "model.embed_tokens.weight"),
    GrowBias(110, "final_logits_bias"),
    SetConfigVocabSize("vocab_size", 104),
    SetJsonKey("tokenizer_config.json", "model_max_length", 64),
    SetSpecialTokenId("eos", 3),
    SetPadToken(),
    ReinitRows((101, 102), ("lm_head.weight",), ("model.embed_tokens.weight", "lm_head.weight")),
    SuppressTokens((104, 105)),
    CopyBaseRows("../base", "model.embed_tokens.weight", "model.embed_tokens.weight", 128),
    CopyBaseChatTemplate("../base", "chat_template.jinja"),
    AddStopId(105),
    WriteChatTemplate("chat_template.json", "chat_template.jinja"),
)


def _finding(code: str, *edits, applicability: Applicability = Applicability.SAFE) -> Finding:
    return Finding(code, "some-rule", Severity.ERROR, f"{code} fired", Location(file="config.json"),
                   fix=Fix(f"{code}'s fix", applicability, tuple(edits)))


def test_every_edit_type_is_exercised_here() -> None:
    assert {type(e) for e in ONE_OF_EACH} == set(EDIT_TYPES)
    assert len(EDIT_KINDS) == len(EDIT_TYPES)  # kinds are unique


@pytest.mark.parametrize("edit", ONE_OF_EACH, ids=lambda e: e.kind)
def test_edits_round_trip_through_json(edit) -> None:
    fix = Fix("what it does", Applicability.UNSAFE, (edit,))
    data = json.loads(json.dumps(fix.to_dict()))
    assert data["edits"][0]["kind"] == edit.kind and "action" not in data
    assert Fix.from_dict(data) == fix
    finding = _finding("HVA101", edit)
    assert Finding.from_dict(json.loads(json.dumps(finding.to_dict()))) == finding


def test_a_report_with_fixes_round_trips() -> None:
    report = Report(target="m", tool_version="0", findings=tuple(_finding("HVA101", e) for e in ONE_OF_EACH))
    assert Report.from_dict(json.loads(json.dumps(report.to_dict()))).findings == report.findings


def test_an_unknown_edit_kind_is_refused_when_read() -> None:
    with pytest.raises(ValueError, match="unknown fix edit kind 'grow-everything'"):
        edit_from_dict({"kind": "grow-everything", "rows": 3})


def _facts(tmp_path, rows: int = 104, tokens: int = 104):
    make_model(tmp_path / "m", "llama", rows, tie_word_embeddings=False)
    make_tokenizer(tmp_path / "m", tokens)
    return gather(tmp_path / "m")


def test_two_grows_become_the_larger(tmp_path) -> None:
    facts = _facts(tmp_path)
    plan = make_plan(facts, [_finding("HVA101", GrowRows(106, "model.embed_tokens.weight")),
                             _finding("HVA102", GrowRows(110, "lm_head.weight"))])
    assert plan.rows_after == 110 and plan.grow == {"model.embed_tokens.weight": 110, "lm_head.weight": 110}


def test_a_config_vocab_size_set_follows_the_grow(tmp_path) -> None:
    """HVA103 asks for vocab_size = today's rows; a grow in the same plan makes it the grown rows."""
    facts = _facts(tmp_path)
    plan = make_plan(facts, [_finding("HVA103", SetConfigVocabSize("vocab_size", 104)),
                             _finding("HVA101", GrowRows(108, "model.embed_tokens.weight"))])
    (edit,) = [e for e in plan.json_edits if e.key == "vocab_size"]
    assert edit.value == plan.rows_after == 108
    assert ("HVA103", "set vocab_size to 108") in [(a.code, a.description) for a in plan.applied]


def test_suppress_tokens_are_united(tmp_path) -> None:
    facts = _facts(tmp_path)
    plan = make_plan(facts, [_finding("HVA950", SuppressTokens((105, 104)), applicability=Applicability.UNSAFE),
                             _finding("HVA950", SuppressTokens((106,)), applicability=Applicability.UNSAFE)],
                     unsafe=True)
    (edit,) = plan.json_edits
    assert (edit.file, edit.key, edit.value) == ("generation_config.json", "suppress_tokens", (104, 105, 106))


def test_a_json_key_in_a_file_fix_does_not_edit_is_left_unfixed(tmp_path) -> None:
    facts = _facts(tmp_path)
    plan = make_plan(facts, [_finding("HVA201", SetJsonKey("model.safetensors", "x", 1))])
    assert plan.json_edits == () and plan.unfixed[0].reason == "--fix does not edit model.safetensors"


def test_unsafe_and_display_only_fixes_are_set_aside(tmp_path) -> None:
    facts = _facts(tmp_path)
    findings = [_finding("HVA202", SetSpecialTokenId("eos", 3), applicability=Applicability.UNSAFE),
                _finding("HVA301", SetJsonKey("tokenizer_config.json", "model_max_length", 64),
                         applicability=Applicability.DISPLAY_ONLY)]
    plan = make_plan(facts, findings)
    assert plan.applied == () and [u.code for u in plan.unfixed] == ["HVA202", "HVA301"]
    assert "never applied" in plan.unfixed[1].reason and "--unsafe-fixes" in plan.unfixed[0].reason
