"""Catalogue group "jsonl lines": JSON Lines data files whose lines are not JSON rows (issue: data verdicts as the
trainer decides them). Each bad line is a finding at its line and the rest is scanned, within bounds: the reader
stops after MAX_BAD_LINES of them, and a damaged block costs a few parses of it, not one per line."""

from __future__ import annotations

from pathlib import Path

from malformed import case


def _data(folder: Path) -> Path:
    data = folder.parent / "data"
    data.mkdir(exist_ok=True)
    return data


@case("jsonl lines", "train.jsonl", says="not JSON Lines")
def dataset_jsonl_twenty_mb_of_lines_that_are_not_json(folder: Path) -> list[str]:
    """7 million one-byte lines, none a JSON row: refused after the first 100, in one line naming the file."""
    data = _data(folder)
    (data / "train.jsonl").write_bytes(b"x\n" * 10_000_000)
    return [str(folder), "--dataset", str(data / "train.jsonl")]


@case("jsonl lines", exit_codes=(1,))
def dataset_jsonl_a_bad_line_in_every_block_of_tiny_rows(folder: Path) -> list[str]:
    """8 MB of short rows with one bad line per MB: each damaged block (58,000 lines) is halved down to its bad
    line, not parsed line by line; HVA533 names the 8 lines and every row is still scanned."""
    data = _data(folder)
    (data / "train.jsonl").write_bytes((b'{"input_ids":[1]}\n' * 58_000 + b"{oops\n") * 8)
    return [str(folder), "--dataset", str(data / "train.jsonl"), "--select", "HVA533"]


@case("jsonl lines", exit_codes=(1,))
def dataset_jsonl_a_bad_line_in_a_file_that_needs_the_json_builder(folder: Path) -> list[str]:
    """Rows the fast reader hands to ``datasets``' JSON builder (an empty record), with a line cut off mid-write:
    the builder refuses such a file whole; it reads a copy without the line, and HVA533 names it (was exit 2)."""
    data = _data(folder)
    row = b'{"input_ids":[1,2],"meta":{}}\n'
    (data / "train.jsonl").write_bytes(row * 500 + b'{"input_ids":[1,\n' + row * 500)
    return [str(folder), "--dataset", str(data / "train.jsonl"), "--select", "HVA533"]
