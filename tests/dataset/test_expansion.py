"""Datasets that expand (issue 24, class 4): depth measured before the parser, lines after decompression,
header columns, dictionary columns decoded; and rules whose work follows the data, not its values."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import pytest

from hf_vocab_audit.dataset.expansion import check_text_file
from hf_vocab_audit.errors import AuditError
from hf_vocab_audit.io.json_depth import DepthState, LineDepth, feed
from hf_vocab_audit.rules.dataset_labels import _first_missing


def _depth(obj: object) -> int:
    if isinstance(obj, list):
        return 1 + max((_depth(x) for x in obj), default=0)
    if isinstance(obj, dict):
        return 1 + max((_depth(x) for x in obj.values()), default=0)
    return 0


def _random(rng: random.Random, levels: int) -> object:
    if levels == 0 or rng.random() < 0.2:
        return rng.choice(['a[b{c', 'q"\\"[[', "x\\\\", 3, None, "]]}}", "\\\\\"{"])
    if rng.random() < 0.5:
        return [_random(rng, levels - 1) for _ in range(rng.randint(0, 3))]
    return {f"k[{i}\\": _random(rng, levels - 1) for i in range(rng.randint(0, 3))}


@pytest.mark.parametrize("seed", range(20))
def test_depth_is_what_json_says_however_the_bytes_are_cut(seed: int):
    """Brackets inside strings (escaped quotes and backslashes included) do not count; chunks cut anywhere."""
    rng = random.Random(seed)
    rows = [_random(rng, rng.randint(0, 12)) for _ in range(20)]
    text = "\n".join(json.dumps(r) for r in rows).encode() + b"\n"
    state, line, at = DepthState(), LineDepth(limit=5), 0
    while at < len(text):
        step = rng.randint(1, 40)
        feed(state, text[at:at + step])
        line.feed(text[at:at + step])
        at += step
    want = max(_depth(r) for r in rows)
    assert state.deepest == want
    assert (line.deepest > 5) == (want > 5)


def test_closers_first_do_not_hide_the_depth():
    state = DepthState()
    feed(state, b"]" * 1000 + b"\n" + b"[" * 300)
    assert state.deepest == 300


def test_healthy_text_files_pass(tmp_path: Path):
    rows = "".join(json.dumps({"text": "a [b] {c}", "ids": [[1, 2], [3]]}) + "\n" for _ in range(1000))
    (tmp_path / "a.jsonl").write_text(rows, encoding="utf-8")
    with gzip.open(tmp_path / "a.json.gz", "wt", encoding="utf-8") as fh:
        fh.write(rows)
    (tmp_path / "a.csv").write_text("text,label\n" + "a b,1\n" * 100, encoding="utf-8")
    for name in ("a.jsonl", "a.json.gz", "a.csv"):
        check_text_file(tmp_path / name)


def test_a_file_that_is_not_gzip_is_one_line(tmp_path: Path):
    (tmp_path / "train.jsonl.gz").write_bytes(b"not gzip at all")
    with pytest.raises(AuditError, match="train.jsonl.gz: cannot be read as gzip"):
        check_text_file(tmp_path / "train.jsonl.gz")


@pytest.mark.parametrize("seed", range(10))
def test_missing_classes_without_a_range_over_the_largest(seed: int):
    rng = random.Random(seed)
    classes = sorted(rng.sample(range(300), rng.randint(1, 60)))
    want = sorted(set(range(classes[-1] + 1)) - set(classes))
    assert _first_missing(classes, 100) == want[:100]
    assert _first_missing(classes, 3) == want[:3]


def test_missing_classes_of_a_label_of_30_million_are_listed_at_once():
    assert _first_missing([0, 1, 30_000_000], 100) == list(range(2, 102))
