"""The coverage record round-trips through JSON, and the verdict it feeds is decided once."""

from __future__ import annotations

from hf_vocab_audit.core.coverage import ColumnCoverage, Coverage, Gap, SplitCoverage, TensorRole, TokenizerCoverage
from hf_vocab_audit.core.findings import Finding, Severity
from hf_vocab_audit.core.outcome import decide

FULL = Coverage(
    tokenizer=TokenizerCoverage("tokenizer.json", 104, 103, 5, 6, 3),
    tensors=(TensorRole("input embedding", "model.embed_tokens.weight", 104, "model.safetensors"),),
    tensors_read=12,
    config_keys=("vocab_size", "eos_token_id"),
    datasets=(SplitCoverage("d.jsonl", "train", 10, True, (ColumnCoverage("input_ids", "input_ids", 10, 80),),
                            (("meta", "no role"),), "pre-tokenized"),),
    rules_run=20,
    rules_selected=22,
    not_examined=(Gap("the tokenizer", "no tokenizer files", ("HVA101",), "pass --tokenizer DIR"),),
)


def test_coverage_round_trips_through_its_json_form():
    assert Coverage.from_dict(FULL.to_dict()) == FULL
    assert Coverage.from_dict(Coverage().to_dict()) == Coverage()


def test_summary_lines_name_rows_tokens_and_gaps():
    lines = FULL.summary_lines()
    assert lines[0].startswith("examined: tokenizer 104 ids") and "20/22 rules ran" in lines[0]
    assert "d.jsonl:train [pre-tokenized] 10+ row(s), 80 token(s): input_ids (input_ids)" in lines[1]
    assert lines[2].startswith("NOT examined: the tokenizer")


def test_gaps_fail_closed_unless_a_partial_audit_is_accepted():
    error = Finding("HVA101", "x", Severity.ERROR, "m")
    assert decide([], not_examined=1).exit_code == 2 and decide([], not_examined=1).verdict == "ERROR"
    partial = decide([], not_examined=1, allow_partial=True)
    assert (partial.exit_code, partial.verdict) == (0, "PARTIAL")
    assert decide([error], not_examined=1, allow_partial=True).verdict == "FAIL"
    assert decide([error], not_examined=1).exit_code == 1  # the finding is the headline; the gap is listed
    assert decide([error], exit_zero=True, not_examined=1).exit_code == 2  # exit-zero waives findings, not gaps
    assert decide([], errors=["boom"], not_examined=1, allow_partial=True).exit_code == 2
    assert decide([]).verdict == "PASS"
