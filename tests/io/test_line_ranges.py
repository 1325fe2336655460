"""Byte ranges of JSON-lines and text files (the Ray engine's units): every line once, in order, whatever
the cuts, and text lines exactly as ``datasets``' text builder reads them."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from hf_vocab_audit.io.jsonlines import NotPlain, jsonl_batches, line_blocks, text_batches

TRICKY = ("plain\r\nwindows\rold mac\n\nvertical\x0btab and \u2028separator\n\ufeffbom-ish é 日本\n"
          "\r\r\nlast line without newline").encode("utf-8")


def _text(path, cuts, block_bytes=None):
    edges = [0, *cuts, path.stat().st_size]
    return [line for a, b in zip(edges, edges[1:])
            for t in text_batches(path, 2, block_bytes, start=a, stop=b) for line in t.column("text").to_pylist()]


def test_text_lines_equal_the_datasets_text_builder(tmp_path):
    datasets = pytest.importorskip("datasets")
    for name, data in (("tricky", TRICKY), ("trailing", b"a\n\nb\n\n"), ("empty", b""), ("one", b"x")):
        path = tmp_path / f"{name}.txt"
        path.write_bytes(data)
        expected = [] if not data else list(datasets.load_dataset(
            "text", data_files={"train": str(path)}, split="train")["text"])
        assert _text(path, []) == expected, name


def test_every_cut_gives_every_line_once_in_order(tmp_path):
    path = tmp_path / "t.txt"
    path.write_bytes(TRICKY)
    whole = _text(path, [])
    for cut in range(len(TRICKY) + 1):  # a row straddling the cut is read by the range it starts in
        assert _text(path, [cut]) == whole, cut
    for cuts in ([3, 4, 5], [1, 20, 21, 40], list(range(0, len(TRICKY), 7))):
        assert _text(path, cuts, block_bytes=5) == whole


def test_line_blocks_end_at_line_ends_and_cover_the_range(tmp_path):
    path = tmp_path / "t.txt"
    path.write_bytes(b"aaa\nbb\nc\n\ndddd")
    assert list(line_blocks(path, 2, 0, 5)) == [b"aaa\n", b"bb\n"]  # "bb" starts at byte 4 < 5
    assert list(line_blocks(path, 100, 5, 9)) == [b"c\n"]  # the empty line starts at byte 9
    assert list(line_blocks(path, 100, 9, 15)) == [b"\ndddd"]
    assert list(line_blocks(path, 100, 12, 15)) == []  # inside the last line: the range before owns it


def test_jsonl_ranges_number_rows_like_the_whole_file(tmp_path):
    rows = [{"text": f"row {i} " + "é" * (i % 7), "label": i % 3} for i in range(50)]
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    whole = pa.concat_tables(jsonl_batches(path, 8))
    size = path.stat().st_size
    for cuts in ([size // 3, size // 3 + 1, 2 * size // 3], list(range(0, size, 97))):
        edges = [0, *cuts, size]
        parts = [t for a, b in zip(edges, edges[1:])
                 for t in jsonl_batches(path, 8, 64, start=a, stop=b, schema=whole.schema)]
        assert pa.concat_tables(parts).equals(whole)


def test_a_jsonl_range_of_another_schema_is_not_plain(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"text": "a", "label": 1}\n{"text": "b", "label": "x"}\n', encoding="utf-8")
    schema = next(jsonl_batches(path, 8, start=0, stop=10)).schema
    with pytest.raises(NotPlain):
        list(jsonl_batches(path, 8, start=20, stop=path.stat().st_size, schema=schema))


def test_a_line_over_the_limit_is_refused_naming_the_file(tmp_path, monkeypatch):
    """A file with no line end (or only old-Mac \\r ends) is one "line": it must not be read whole into
    memory by the range that holds its start, and the ranges after it skip it in bounded steps."""
    from hf_vocab_audit.errors import AuditError
    from hf_vocab_audit.io import jsonlines

    monkeypatch.setattr(jsonlines, "MAX_LINE_BYTES", 1 << 20)
    monkeypatch.setattr(jsonlines, "STEP", 4096)
    path = tmp_path / "one-line.txt"
    path.write_bytes(b"x\r" * (3 << 19) + b"\nshort\n")  # 3 MB before the only b"\n", then one short line
    with pytest.raises(AuditError, match=r"one-line.txt: holds a line over 1048576 bytes"):
        list(line_blocks(path, 65536, 0, 65536))
    assert list(line_blocks(path, 65536, 65536, path.stat().st_size)) == [b"short\n"]  # skipped, not kept
