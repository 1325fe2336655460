"""A JSON Lines file with lines that are not JSON rows: HVA533 at each line, and the rest scanned, on every path.

The fast reader always did this; ``datasets``' JSON builder (the fallback for rows it cannot take as they are)
and Ray Data's JSON reader refuse the whole file at its first bad line, and ``--engine ray``'s tasks fell back
to Ray Data at one. Each path now reads the file without its bad lines and reports them at their line in the
file, so the report is the local engine's whatever reads the file (review findings on issue 38).
"""

from __future__ import annotations

import json
from pathlib import Path

from hf_vocab_audit import audit
from hf_vocab_audit.formats import render
from hf_vocab_audit.io import jsonlines
from hf_vocab_audit.io.jsonlines import BadLines


def write_with_bad_lines(path: Path, rows: list[dict], bad: dict[int, str]) -> Path:
    """``rows`` as JSON lines with the ``bad`` lines (1-based line number -> text) put at those lines."""
    lines = [json.dumps(r) for r in rows]
    for number in sorted(bad):
        lines.insert(number - 1, bad[number])
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def bad_lines_said(report) -> str:
    return next(f.message for f in report.findings if f.code == "HVA533")


NESTED = [{"text": "w1 w2", "label": i % 3, "meta": {}} for i in range(40)]  # {} needs datasets' builder
PLAIN = [{"text": "w1 w2 w3", "label": i % 3} for i in range(40)]


def test_the_datasets_fallback_reports_each_bad_line_and_scans_the_rest(bert_cls, tmp_path):
    data = write_with_bad_lines(tmp_path / "nested.jsonl", NESTED, {4: "{oops", 20: "[1, 2]"})
    report = audit(bert_cls, datasets=[data])
    said = bad_lines_said(report)
    assert "2 line(s) are not JSON rows" in said and "line 4:" in said, said
    assert report.exit_code() == 1  # a finding, not a refused file (exit 2)
    assert report.dataset.splits[0].rows == 40  # every good row scanned
    assert "line 20" in render(report, "json")


def test_bad_lines_before_and_after_the_fallback_are_each_reported_once(bert_cls, tmp_path, monkeypatch):
    """The fast reader reports a bad line in its plain first blocks; the file then needs the builder (a new
    column), and the fallback reports only the lines after."""
    monkeypatch.setattr(jsonlines, "BLOCK_BYTES", 256)
    rows = [{"text": "w1 w2", "label": 1} for _ in range(20)] + NESTED[:20]
    data = write_with_bad_lines(tmp_path / "late.jsonl", rows, {2: "{oops", 35: "not json"})
    from hf_vocab_audit.dataset.spec import open_spec

    (split,) = open_spec(str(data))
    items = list(split.batches(4))
    bad = [line for item in items if isinstance(item, BadLines) for line, _ in item.lines]
    assert bad == [2, 35]
    assert sum(item.num_rows for item in items if not isinstance(item, BadLines)) == 40


def test_a_range_first_line_is_numbered_as_in_the_file(tmp_path):
    """Every cut of a file: the number first_line_at gives is the file line of the range's first line."""
    text = b'{"a": 1}\n\n{"a": 22}\n{"a": 333}\nx\n{"a": 4}'
    path = tmp_path / "f.jsonl"
    path.write_bytes(text)
    starts = [0] + [i + 1 for i, b in enumerate(text) if b == ord("\n")]  # byte offset of each line
    for cut in range(len(text) + 1):
        blocks = list(jsonlines.line_blocks(path, 4, cut, len(text)))
        if blocks:
            first = blocks[0].split(b"\n")[0]
            number = jsonlines.first_line_at(path, cut)
            assert text[starts[number - 1]:].startswith(first) and starts[number - 1] >= cut, cut
