"""Chat and instruction splits without trl: the issue's 499-row case, format recognition, flags and bad input."""

from __future__ import annotations

import pyarrow as pa
import pytest
from chat_builders import CHATML, chat_checkpoint
from dataset_builders import write_jsonl

from hf_vocab_audit import AuditError, audit
from hf_vocab_audit.dataset.chat_formats import LM, PREFERENCE, PROMPT_COMPLETION, UNPAIRED, detect


def _turns(*pairs):
    return [{"role": r, "content": c} for r, c in pairs]


def test_the_499_row_case_fails_the_data_gate_naming_split_row_turn_and_token(tmp_path, run_cli):
    """ChatML markers added to a Llama tokenizer without a resize; 499 rows of messages: the data gate alone
    (--select HVA5) used to pass with the column skipped."""
    model = chat_checkpoint(tmp_path / "model", CHATML, resized=False)
    rows = [{"messages": _turns(("user", f"w{i % 50} w5"), ("assistant", "w7 w8"))} for i in range(499)]
    data = write_jsonl(tmp_path / "chat.jsonl", rows)
    code, out, _ = run_cli("check", model, "--dataset", data, "--select", "HVA5")
    assert code == 1
    assert "HVA501" in out and "split 'train' column 'messages'" in out and "in 499 row(s)" in out
    assert "row 0 position 0 (turn 0 (user), token '<|im_start|>' id 104)" in out
    assert "(turn 1 (assistant), token '<|im_start|>' id 104)" in out
    assert "language-modeling (messages; turn lists): 499 rows, 4990 tokens of 'messages'" in out
    assert "no role for a column" not in out
    healthy = chat_checkpoint(tmp_path / "healthy", CHATML, resized=True)
    assert run_cli("check", healthy, "--dataset", data, "--select", "HVA5")[0] == 0


def _schema(**columns):
    return pa.Table.from_pylist([columns]).schema


def test_formats_recognised_as_trl_reads_the_columns():
    turns = _turns(("user", "a"))
    assert detect(_schema(messages=turns)).kind == LM
    assert detect(_schema(messages=turns, tools=[{"type": "function"}])).tools == "tools"
    assert detect(_schema(prompt="a", completion="b")).kind == PROMPT_COMPLETION
    assert detect(_schema(prompt=turns, completion=turns)).conversational
    assert detect(_schema(prompt="a", completion="b", label=True)).kind == UNPAIRED  # a boolean: not a class
    assert detect(_schema(prompt="a", completion="b", label=1)).kind == PROMPT_COMPLETION
    assert detect(_schema(prompt="a", chosen="b", rejected="c")).kind == PREFERENCE
    assert detect(_schema(chosen=turns, rejected=turns)).implicit_prompt
    assert detect(_schema(text="a")) is None
    assert detect(_schema(prompt="a", completion=turns)) is None  # TRL cannot mix strings and turns
    assert detect(_schema(conversation=turns), messages_column="conversation").messages == "conversation"
    assert detect(_schema(messages=turns), "off") is None


def test_the_format_flag_settles_and_refuses(tmp_path):
    turns = _turns(("user", "w1"), ("assistant", "w2"))
    both = _schema(prompt=turns, completion=turns, messages=turns)
    assert detect(both).kind == PROMPT_COMPLETION  # TRL's SFT reads prompt/completion first
    assert detect(both, LM).kind == LM
    with pytest.raises(AuditError, match="do not hold that format"):
        detect(both, PREFERENCE)
    with pytest.raises(AuditError, match="--chat-format 'chat'"):
        detect(both, "chat")
    with pytest.raises(AuditError, match="--messages-column 'x': not a column of role/content turns"):
        detect(both, messages_column="x")


def test_a_boolean_label_is_not_scanned_as_a_class_label(tmp_path):
    model = chat_checkpoint(tmp_path / "model", CHATML, resized=True)
    data = write_jsonl(tmp_path / "kto.jsonl", [{"prompt": "w1", "completion": " w2", "label": b}
                                               for b in (True, False)])
    report = audit(model, datasets=[data])
    split = report.to_dict()["dataset"]["splits"][0]
    assert split["format"].startswith("unpaired-preference") and "label" not in split["columns"]
    assert not [f for f in report.findings if f.code.startswith("HVA51")]


def test_turn_lists_with_no_chat_template(tmp_path):
    model = chat_checkpoint(tmp_path / "model", "", resized=True)
    data = write_jsonl(tmp_path / "c.jsonl", [{"messages": _turns(("user", "w1"))}])
    report = audit(model, datasets=[data], select=["HVA5"])
    assert [f.code for f in report.findings] == ["HVA550"]
    assert "no chat template" in report.findings[0].message


def test_chat_flags_as_one_line_errors(tmp_path, run_cli):
    model = chat_checkpoint(tmp_path / "model", CHATML, resized=True)
    data = write_jsonl(tmp_path / "c.jsonl", [{"messages": _turns(("user", "w1"))}])
    code, _, err = run_cli("check", model, "--dataset", data, "--chat-format", "preference")
    assert code == 2 and "do not hold that format" in err and "Traceback" not in err
    bad = tmp_path / "bad.json"
    bad.write_text('{"max_length": "long"}')
    code, _, err = run_cli("check", model, "--dataset", data, "--trl-config", bad)
    assert code == 2 and '"max_length" must be a positive integer' in err


def test_chat_format_from_the_settings_file(tmp_path, run_cli):
    """The operator's settings file names the format; a flag wins over it; the model's own file may not."""
    model = chat_checkpoint(tmp_path / "model", CHATML, resized=False)
    data = write_jsonl(tmp_path / "c.jsonl", [{"messages": _turns(("user", "w1"), ("assistant", "w2"))}])
    settings = tmp_path / "gate.toml"
    settings.write_text('chat-format = "off"\n')
    code, out, _ = run_cli("check", model, "--dataset", data, "--select", "HVA5", "--config", settings)
    assert code == 2 and "no role for a column" in out  # read column by column: messages is not examined
    assert run_cli("check", model, "--dataset", data, "--select", "HVA5", "--allow-partial", "--config", settings)[0] == 0
    assert run_cli("check", model, "--dataset", data, "--select", "HVA5", "--chat-format", "language-modeling",
                   "--config", settings)[0] == 1
    (model / "hf-vocab-audit.toml").write_text('chat-format = "off"\n')  # the model's own: not obeyed
    assert run_cli("check", model, "--dataset", data, "--select", "HVA5")[0] == 1
    settings.write_text("chat-format = 3\n")
    code, _, err = run_cli("check", model, "--dataset", data, "--config", settings)
    assert code == 2 and "chat-format: must be a string" in err


def test_a_rendered_row_too_long_to_tokenize_is_skipped_and_said(tmp_path):
    """One multi-megabyte turn is not handed to the tokenizers library (it can abort the process): HVA532."""
    from hf_vocab_audit.facts.tokenizer.bounded_calls import MAX_TEXT_CHARS

    model = chat_checkpoint(tmp_path / "model", CHATML, resized=False)
    rows = [{"messages": _turns(("user", "w1"), ("assistant", "x" * (MAX_TEXT_CHARS + 10)))},
            {"messages": _turns(("user", "w1"), ("assistant", "w2"))}]
    report = audit(model, datasets=[write_jsonl(tmp_path / "c.jsonl", rows)], select=["HVA5"])
    long = next(f for f in report.findings if f.code == "HVA532")
    assert long.location.row == 0 and long.location.column == "messages"
    assert {f.location.row for f in report.findings if f.code == "HVA501"} == {1}
