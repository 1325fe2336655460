"""The report codec (hf_vocab_audit/core/codec.py): one encoder/decoder for every model class.

What a user relies on: the JSON a report writes is the one it always wrote (the goldens read back and write
the same bytes), it validates against the schema generated from the same classes, and a JSON form from an
untrusted hand (a report, a guard sidecar's limits) is refused with one line naming the key, never a
traceback.
"""

from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path

import jsonschema
import pytest

from hf_vocab_audit.core.codec import CodecError, decode, encode, json_schema, known_keys
from hf_vocab_audit.core.findings import Finding, FixResult, Location, Severity
from hf_vocab_audit.core.fixes import (
    Applicability,
    Compared,
    Fix,
    GrownTensor,
    ReinitRows,
    Resized,
    SetPadToken,
    Verification,
    edit_from_dict,
)
from hf_vocab_audit.core.outcome import Outcome, decide
from hf_vocab_audit.core.report import Report
from hf_vocab_audit.core.sections import (
    ColumnSection,
    LabelValues,
    MaskPreview,
    PreviewRow,
    PreviewToken,
    SplitSection,
    ValueCount,
)
from hf_vocab_audit.guard.limits import LiveLimits

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_FILE = ROOT / "reports" / "schema" / "report.generated.schema.json"
GOLDEN_REPORTS = sorted([*(ROOT / "reports" / "formats").glob("*.json"), *(ROOT / "reports" / "examples").glob("*.json")])


def _regenerate():
    spec = importlib.util.spec_from_file_location("regenerate", ROOT / "scripts" / "regenerate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _schema() -> dict:
    return json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))


def test_there_are_golden_reports():
    assert {p.name for p in GOLDEN_REPORTS} >= {"broken.json", "healthy-padded-qwen2.json", "broken-llama-chatml.json"}


@pytest.mark.parametrize("path", GOLDEN_REPORTS, ids=lambda p: p.name)
def test_every_golden_report_validates_against_the_generated_schema(path):
    jsonschema.Draft202012Validator(_schema()).validate(json.loads(path.read_text(encoding="utf-8")))


@pytest.mark.parametrize("path", GOLDEN_REPORTS, ids=lambda p: p.name)
def test_every_golden_report_reads_back_and_writes_the_same_bytes(path):
    data = json.loads(path.read_text(encoding="utf-8"))
    back = Report.from_dict(data)
    assert json.dumps(back.to_dict(), ensure_ascii=False) == json.dumps(data, ensure_ascii=False)  # key order too
    assert Report.from_dict(back.to_dict()) == back


def test_the_generated_schema_is_current_and_valid():
    jsonschema.Draft202012Validator.check_schema(_schema())
    assert SCHEMA_FILE.read_text(encoding="utf-8") == _regenerate().report_schema(), (
        "stale reports/schema/report.generated.schema.json: run `python scripts/regenerate.py`")


@pytest.mark.parametrize("damage", ["severity", "location-key", "top-level-key", "missing-verdict", "edit-field"])
def test_the_generated_schema_refuses_a_malformed_report(damage):
    data = json.loads((ROOT / "reports" / "formats" / "broken.json").read_text(encoding="utf-8"))
    finding = data["findings"][0]
    if damage == "severity":
        finding["severity"] = "fatal"
    elif damage == "location-key":
        finding["location"]["surprise"] = 1
    elif damage == "top-level-key":
        data["surprise"] = {}
    elif damage == "missing-verdict":
        del data["verdict"]
    else:
        fixed = next(f for f in data["findings"] if f["fix"] and f["fix"]["edits"] and "rows" in f["fix"]["edits"][0])
        fixed["fix"]["edits"][0]["rows"] = "many"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(_schema()).validate(data)


def test_the_report_keys_are_the_schema_keys():
    """Every top-level key the report writes or reads is described; any other is an extension (Report.extra)."""
    assert known_keys(Report) == set(json_schema(Report)["properties"]) == {
        "schema_version", "tool", "target", "summary", "facts", "findings", "fixes", "skipped", "errors",
        "rules_run", "duration_s", "coverage", "causes", "source", "fix", "exit_code", "verdict", "fail_on",
        "exit_zero", "failing", "not_examined", "allow_partial", "weights", "dataset", "vllm", "gguf_source"}


def test_an_unknown_top_level_section_is_kept_in_extra_and_written_back():
    data = json.loads((ROOT / "reports" / "formats" / "broken.json").read_text(encoding="utf-8"))
    data["from_a_newer_version"] = {"x": [1, 2]}
    back = Report.from_dict(data)
    assert back.extra == {"from_a_newer_version": {"x": [1, 2]}}
    assert back.to_dict() == data


def test_an_unjudged_report_states_the_default_verdict():
    finding = Finding("HVA101", "ids-past-rows", Severity.ERROR, "id 104 >= 104 rows")
    report = Report(target="m", tool_version="0", findings=(finding,))
    data = report.to_dict()
    assert (data["exit_code"], data["verdict"], data["fail_on"], data["summary"]["error"]) == (1, "FAIL", "error", 1)
    assert Report.from_dict(data) == report.judged()
    assert "fix" not in data and "weights" not in data  # absent sections are left out, not null


# ---- the shapes declared on fields and classes -------------------------------------------------------

def test_location_writes_only_what_is_known_and_line_round_trips():
    loc = Location(file="config.json", key="vocab_size", line=3)
    assert loc.to_dict() == {"file": "config.json", "key": "vocab_size", "line": 3}
    assert Location.from_dict(loc.to_dict()).line == 3


def test_a_finding_writes_hint_and_fix_as_null_but_leaves_out_allowed_and_cause():
    f = Finding("HVA101", "ids-past-rows", Severity.ERROR, "m")
    assert list(f.to_dict()) == ["code", "name", "severity", "message", "location", "hint", "fix", "details"]
    assert f.to_dict()["hint"] is None and f.to_dict()["fix"] is None
    allowed = Finding("HVA101", "ids-past-rows", Severity.ERROR, "m", allowed="known", cause="c")
    assert allowed.to_dict()["allowed"] == "known" and Finding.from_dict(allowed.to_dict()) == allowed


def test_edits_carry_their_kind_first_and_come_back_as_their_class():
    fix = Fix("reinit", Applicability.UNSAFE, (ReinitRows((3, 4), ("lm_head.weight",)), SetPadToken()))
    data = fix.to_dict()
    assert data["edits"] == [{"kind": "reinit-untrained-rows", "ids": [3, 4], "tensors": ["lm_head.weight"],
                              "all_tensors": []}, {"kind": "set-pad-token"}]
    assert Fix.from_dict(json.loads(json.dumps(data))) == fix
    with pytest.raises(CodecError, match=r"^edits\[0\]\.ids\[1\] has the wrong type: 'x'$"):
        decode(Fix, {**data, "edits": [{**data["edits"][0], "ids": [3, "x"]}]})


def test_an_unknown_edit_kind_is_one_line_naming_it():
    with pytest.raises(ValueError, match="unknown fix edit kind 'grow-everything'") as info:
        edit_from_dict({"kind": "grow-everything"})
    assert "\n" not in str(info.value) and "grow-embeddings" in str(info.value)  # it lists the kinds it knows


def test_verification_keeps_its_json_order_names_and_empty_objects():
    v = Verification("ok", None, (GrownTensor("w", "model.safetensors", 104, 128, "mean"),), Resized(104, 128, True))
    data = v.to_dict()
    assert list(data) == ["grown", "transformers", "compared", "load"] and data["compared"] == {}
    assert Verification.from_dict(data) == v
    compared = Compared(bytes_compared=8, files_compared=1)
    assert list(compared.to_dict().items()) == [("files_compared", 1), ("bytes_compared", 8)]
    result = FixResult("in", "out", "copy", 104, 104)
    assert result.to_dict()["verification"] == {} and "reinit" not in result.to_dict()
    assert FixResult.from_dict(result.to_dict()) == result
    reinit = FixResult("in", "out", "surgical", 104, 104, reinit={"emb": (1, 2)})
    assert reinit.to_dict()["reinit"] == {"emb": [1, 2]} and FixResult.from_dict(reinit.to_dict()) == reinit


def test_a_preview_row_is_compact_and_leaves_out_what_did_not_happen():
    row = PreviewRow(0, "messages", (PreviewToken("hi", 5, True),), 1)
    assert row.to_dict() == {"row": 0, "sequence": "messages", "length": 1, "tokens": [["hi", 5, True]]}
    cut = PreviewRow(1, "messages", (), 9, truncated_from=12, dropped=True, problem="p")
    assert list(cut.to_dict())[-3:] == ["truncated_from", "dropped", "problem"]
    preview = MaskPreview((row, cut))
    assert MaskPreview.from_dict(json.loads(json.dumps(preview.to_dict()))) == preview


def test_label_values_are_written_into_their_column():
    listed = ColumnSection("label", 4, 4, 0, 1, 3, labels=LabelValues(2, (ValueCount(1, 3), ValueCount(3, 1))))
    data = listed.to_dict()
    assert data["unique_count"] == 2 and data["unique_values"] == [{"value": 1, "count": 3}, {"value": 3, "count": 1}]
    assert "labels" not in data and "unique_note" not in data
    capped = ColumnSection("label", 4, 4, 0, 1, 3, labels=LabelValues(None, None, "too many"))
    assert {k: v for k, v in capped.to_dict().items() if k.startswith("unique")} == {"unique_values": None,
                                                                                  "unique_note": "too many"}
    plain = ColumnSection("input_ids", 4, 8, 0, 0, 7, max_length=2)
    for column in (listed, capped, plain):
        assert ColumnSection.from_dict(json.loads(json.dumps(column.to_dict()))) == column


def test_a_split_writes_its_trainer_settings_only_with_a_format():
    plain = SplitSection("d.jsonl", "train", 3, False, {}, skipped_columns=(("id", "no role"),))
    data = plain.to_dict()
    assert data["skipped_columns"] == [{"column": "id", "reason": "no role"}]
    assert "format" not in data and "chat_settings" not in data
    chat = SplitSection("c.jsonl", "train", 3, False, {}, format="messages", chat_settings=None)
    assert chat.to_dict()["format"] == "messages" and chat.to_dict()["chat_settings"] is None
    for split in (plain, chat):
        assert SplitSection.from_dict(json.loads(json.dumps(split.to_dict()))) == split


def test_the_outcome_is_written_flat_with_its_verdict_and_read_with_the_summary():
    outcome = decide((), allow_partial=True, not_examined=1)
    data = {"summary": outcome.counts, **outcome.to_dict()}
    assert list(outcome.to_dict()) == ["exit_code", "verdict", "fail_on", "exit_zero", "failing", "not_examined",
                                       "allow_partial"]
    assert outcome.to_dict()["verdict"] == "PARTIAL" and Outcome.from_dict(data) == outcome


# ---- untrusted JSON: one line naming the problem -----------------------------------------------------

def _broken() -> dict:
    return json.loads((ROOT / "reports" / "formats" / "broken.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("damage, says", [
    (lambda d: d["findings"][0].update(severity=3), r"^findings\[0\]\.severity is 3, not one of info, warning, error$"),
    (lambda d: d["findings"][1]["location"].update(line="7"), r"^findings\[1\]\.location\.line has the wrong type: '7'$"),
    (lambda d: d.pop("target"), r"^Report lacks target$"),
    (lambda d: d.pop("fail_on"), r"lacks fail_on"),
    (lambda d: d.update(tool={"name": "x"}), r"^tool\.version has the wrong type: None$"),
    (lambda d: d["coverage"].update(tensors_read=True), r"^coverage\.tensors_read has the wrong type: True$"),
    (lambda d: d["findings"][0].update(details=[]), r"^findings\[0\]\.details has the wrong type: \[\]$"),
])
def test_a_malformed_report_is_one_codec_error_line(damage, says):
    data = _broken()
    damage(data)
    with pytest.raises(CodecError, match=says) as info:
        Report.from_dict(data)
    assert isinstance(info.value, ValueError) and "\n" not in str(info.value)


def test_a_hostile_value_does_not_flood_the_error_line():
    data = _broken()
    data["findings"][0]["code"] = ["\n" + "x" * 10_000]
    with pytest.raises(CodecError) as info:
        Report.from_dict(data)
    assert len(str(info.value)) <= 200 and "\n" not in str(info.value)


@pytest.mark.parametrize("data", [[], "report", None, 3])
def test_a_report_that_is_not_an_object_is_refused(data):
    with pytest.raises(CodecError, match="has the wrong type"):
        Report.from_dict(data)


LIMITS = LiveLimits("LlamaForCausalLM", "llama", "m", 104, "model.embed_tokens", 104, 104, "lm", None, None, None, 0,
                    None, "sdpa", replaced_ids=(7,), added_token_ids=(100, 101))


def test_live_limits_round_trip_and_write_their_usable_positions():
    data = json.loads(json.dumps(LIMITS.to_dict()))
    assert list(data)[-1] == "usable_positions" and data["added_token_ids"] == [100, 101]
    assert LiveLimits.from_dict(data) == LIMITS  # usable_positions is computed: ignored when read


@pytest.mark.parametrize("key, value, says", [
    ("input_rows", "104", "limits.input_rows has the wrong type: '104'"),
    ("shifts_labels", 1, "limits.shifts_labels has the wrong type: 1"),
    ("replaced_ids", [1, None], r"limits.replaced_ids\[1\] has the wrong type: None"),
    ("label_kind", None, "limits.label_kind has the wrong type: None"),
    ("model_class", None, "limits.model_class has the wrong type: None"),
])
def test_a_sidecar_with_limits_of_the_wrong_type_is_one_line(key, value, says):
    data = {**LIMITS.to_dict(), key: value}
    with pytest.raises(ValueError, match=says):
        LiveLimits.from_dict(data)


def test_a_sidecar_missing_limits_names_them():
    data = LIMITS.to_dict()
    del data["model_class"], data["input_rows"]
    with pytest.raises(ValueError, match="^limits lacks model_class, input_rows$"):
        LiveLimits.from_dict(data)


def test_encode_writes_enums_by_value_tuples_as_lists_and_paths_as_strings():
    assert encode({"a": (Severity.ERROR, Path("x/y"))}) == {"a": ["error", "x/y"]}
    assert copy.deepcopy(encode(LIMITS)) == LIMITS.to_dict()
