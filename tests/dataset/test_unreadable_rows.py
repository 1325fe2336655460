"""Rows the trainer cannot use do not stop the scan: text missing from several rows (null once ``datasets``
reads the file) and lines that are not JSON are findings at their row or line, and the rest is scanned."""

from __future__ import annotations

import pytest
from dataset_builders import write_jsonl

from hf_vocab_audit import audit


def _found(report, code):
    return [f for f in report.findings if f.code == code]


def test_text_missing_or_null_in_several_rows(llama_lm, tmp_path):
    """Two or more null text rows used to crash the scan (None values sorted to count them)."""
    import datasets
    from transformers import AutoTokenizer

    rows = [{"text": "w1 w2"}, {"other": 1}, {"text": None}, {"text": "w3"}, {"other": 2}]
    data = write_jsonl(tmp_path / "t.jsonl", rows)
    loaded = datasets.load_dataset("json", data_files={"train": str(data)})["train"]
    assert loaded["text"] == ["w1 w2", None, None, "w3", None]  # what the trainer gets
    with pytest.raises((TypeError, ValueError)):  # and what its tokenizer does with them
        AutoTokenizer.from_pretrained(llama_lm)(loaded["text"])
    report = audit(llama_lm, datasets=[data])
    (hit,) = _found(report, "HVA531")
    assert "3 value(s) in 3 row(s) are null" in hit.message and hit.location.row == 1
    assert [loc["row"] for loc in hit.details["locations"]] == [1, 2, 4]
    assert report.to_dict()["dataset"]["splits"][0]["columns"]["text"]["rows"] == 5
    healthy = write_jsonl(tmp_path / "h.jsonl", [r for r in rows if r.get("text")])
    assert _found(audit(llama_lm, datasets=[healthy]), "HVA531") == []


def _lines(path, lines):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_a_line_that_is_not_json_is_reported_at_its_line_and_the_rest_scanned(llama_lm, tmp_path):
    """datasets refuses the whole file; the scan names each bad line (file:line) and checks every other row:
    here row 2 (line 4) holds an id past the rows, found past the bad line."""
    import datasets

    lines = ['{"input_ids": [1, 5]}', '{"input_ids": [1, 6]', "", '{"input_ids": [1, 500]}', "<<<<<<< HEAD",
             '{"input_ids": [1, 7]}']
    data = _lines(tmp_path / "t.jsonl", lines)
    with pytest.raises(datasets.exceptions.DatasetGenerationError):  # the trainer's loader refuses the file
        datasets.load_dataset("json", data_files={"train": str(data)})
    report = audit(llama_lm, datasets=[data])
    (bad,) = _found(report, "HVA533")
    assert bad.location.file == str(data) and bad.location.line == 2
    assert [d["line"] for d in bad.details["lines"]] == [2, 5] and bad.details["stopped_after_line"] is None
    assert "line 2:" in bad.message and "line 5:" in bad.message
    (hit,) = _found(report, "HVA501")
    assert hit.location.row == 1  # the third line of data is the second row read
    assert report.to_dict()["dataset"]["splits"][0]["rows"] == 3
    clean = _lines(tmp_path / "c.jsonl", [line for k, line in enumerate(lines) if k not in (1, 4)])
    assert _found(audit(llama_lm, datasets=[clean]), "HVA533") == []


def test_too_many_bad_lines_stop_the_read_and_say_where(llama_lm, tmp_path):
    from hf_vocab_audit.io.jsonlines import MAX_BAD_LINES

    lines = ['{"input_ids": [1, 5]}'] + ["not json"] * (MAX_BAD_LINES + 5) + ['{"input_ids": [1, 500]}']
    report = audit(llama_lm, datasets=[_lines(tmp_path / "t.jsonl", lines)])
    (bad,) = _found(report, "HVA533")
    assert bad.details["stopped_after_line"] == MAX_BAD_LINES + 1 and "rest of the file was not scanned" in bad.message
    assert _found(report, "HVA501") == []  # never read


def test_a_file_of_no_json_rows_is_one_line(llama_lm, tmp_path):
    from hf_vocab_audit import AuditError

    with pytest.raises(AuditError, match="line 1: not a JSON row"):
        audit(llama_lm, datasets=[_lines(tmp_path / "t.jsonl", ["hello", "world"])])


@pytest.mark.parametrize("block_bytes", [40, 200, 1 << 20])
def test_the_reader_skips_exactly_the_lines_json_refuses_in_any_block(tmp_path, block_bytes):
    """Rows and bad lines across block boundaries, against Python's json module line by line."""
    import json

    import pyarrow as pa

    from hf_vocab_audit.io.jsonlines import BadLines, jsonl_rows_and_bad_lines

    lines = []
    for i in range(60):
        lines.append(f'{{"a": {i}, "b": "w{i}"}}' if i % 7 else ("{oops" if i % 2 else '{"a": 1,'))
    lines[30] = ""
    path = _lines(tmp_path / "t.jsonl", lines)

    def is_row(text):
        try:
            return isinstance(json.loads(text), dict)
        except ValueError:
            return False

    items = list(jsonl_rows_and_bad_lines(path, 8, block_bytes))
    assert isinstance(items[0], pa.Table)
    rows = [r["a"] for t in items if isinstance(t, pa.Table) for r in t.to_pylist()]
    bad = [n for b in items if isinstance(b, BadLines) for n, _ in b.lines]
    assert rows == [json.loads(x)["a"] for x in lines if x and is_row(x)]
    assert bad == [k + 1 for k, x in enumerate(lines) if x and not is_row(x)]


@pytest.mark.parametrize("order", ["mixed", "list-content-only"])
def test_valid_rows_whose_types_vary_are_not_bad_lines(llama_lm, tmp_path, order):
    """A user turn with list content beside an assistant turn with string content is valid JSON that
    ``datasets`` reads (``Json`` content) and pyarrow refuses alone: never HVA533, never exit 2."""
    import datasets

    text = {"messages": [{"role": "user", "content": "w1"}, {"role": "assistant", "content": "w2"}]}
    parts = {"messages": [{"role": "user", "content": [{"type": "text", "text": "w1"}]},
                          {"role": "assistant", "content": "w2"}]}
    rows = [text, parts, text] if order == "mixed" else [parts]
    data = write_jsonl(tmp_path / "chat.jsonl", rows)
    assert len(datasets.load_dataset("json", data_files={"train": str(data)})["train"]) == len(rows)
    report = audit(llama_lm, datasets=[data], chat_format="off")
    assert _found(report, "HVA533") == []
