"""The kernel: exact locations, and a merge that gives the same summary in any batch split and order."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa

from hf_vocab_audit.dataset import kernel as k
from hf_vocab_audit.dataset import summary as s
from hf_vocab_audit.facts.limits import InputLimits

CTX = s.ScanContext(
    "src", "train",
    (s.ColumnRole("input_ids", k.INPUT_IDS), s.ColumnRole("label", k.CLASS_LABEL),
     s.ColumnRole("labels", k.LM_LABELS, input_ids_column="input_ids")),
    InputLimits(input_rows=50, output_rows=50, positions=6, num_labels=3),
)


def _table(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    ids = [list(rng.integers(-2, 53, size=int(rng.integers(0, 9)))) for _ in range(n)]
    return pa.table({
        "input_ids": ids,
        "label": rng.integers(-1, 5, size=n),
        "labels": [[int(v) if v % 3 else -100 for v in row] for row in ids],
    })


def _batched(table: pa.Table, cuts: list[int]) -> list[s.Summary]:
    out, start = [], 0
    for end in [*cuts, table.num_rows]:
        out.append(k.summarize(table.slice(start, end - start), start, CTX))
        start = end
    return out


def test_merge_is_associative_and_order_free():
    table = _table(300, 1)
    whole = k.summarize(table, 0, CTX)
    rng = random.Random(0)
    for _ in range(5):
        cuts = sorted(rng.sample(range(1, 300), 6))
        parts = _batched(table, cuts)
        rng.shuffle(parts)
        left = parts[0]
        for p in parts[1:]:
            left = s.merge(left, p)
        right = parts[-1]
        for p in reversed(parts[:-1]):
            right = s.merge(p, right)
        assert left == whole
        assert right == whole


def test_locations_are_global_rows_and_positions():
    table = pa.table({"input_ids": [[1, 2], [3, 60, 4, 61], [5]], "label": [0, 1, 2],
                      "labels": [[1, 2], [3, 4, 5, 6], [7]]})
    s = k.summarize(table, 1000, CTX)
    v = s.violations[("src", "train", "input_ids", k.ID_TOO_LARGE)]
    assert (v.values, v.rows, v.locations, v.top) == (2, 1, ((1001, 1, 60), (1001, 3, 61)), {60: 1, 61: 1})
    stats = s.stats[("src", "train", "input_ids")]
    assert (stats.min, stats.max, stats.max_length) == (1, 61, 4)
    assert s.stats[("src", "train", "label")].uniques == {0: (1, 1000, None), 1: (1, 1001, None), 2: (1, 1002, None)}


def test_healthy_batch_has_no_violations():
    table = pa.table({"input_ids": [[1, 2, 3], [4, 49]], "label": [0, 2], "labels": [[-100, 2, 3], [4, 49]]})
    assert k.summarize(table, 0, CTX).violations == {}
