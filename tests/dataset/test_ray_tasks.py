"""A Ray task's unit under ``--max-rows``: it summarises the rows left and stops reading past them."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from hf_vocab_audit.dataset.engines.ray_tasks import Unit, scan_unit
from hf_vocab_audit.dataset.kernel import summarize
from hf_vocab_audit.dataset.summary import ColumnRole, ScanContext
from hf_vocab_audit.facts.limits import InputLimits

CTX = ScanContext("s", "train", (ColumnRole("input_ids", "input_ids"),), InputLimits(input_rows=50, positions=None,
                                                                              num_labels=None))


def _groups(tmp_path) -> tuple[Unit, pa.Table]:
    """100 rows in 10 row groups; rows 40 and 90 hold an id past the 50 embedding rows."""
    ids = [[1, 2, 3] for _ in range(100)]
    ids[40], ids[90] = [1, 77], [1, 99]
    table = pa.table({"input_ids": ids})
    path = tmp_path / "train.parquet"
    pq.write_table(table, path, row_group_size=10)
    return Unit("parquet", str(path), 0, 10), table


def test_a_unit_stops_at_the_batch_past_its_limit(tmp_path):
    unit, table = _groups(tmp_path)
    summary, done, total, _ = scan_unit(unit, CTX, [], 5, 45, None)
    assert (done, total) == (45, 50)  # ten batches of five rows read, not twenty
    assert summary == summarize(table.slice(0, 45), 0, CTX)  # row 40 found, row 90 never read


def test_a_unit_without_a_limit_or_with_none_left(tmp_path):
    unit, table = _groups(tmp_path)
    summary, done, total, _ = scan_unit(unit, CTX, [], 7, None, None)
    assert (done, total) == (100, 100) and summary == summarize(table, 0, CTX)
    _, done, total, _ = scan_unit(unit, CTX, [], 7, 0, None)
    assert (done, total) == (0, 7)  # one batch tells the driver the split goes on
    _, done, total, _ = scan_unit(unit, CTX, [], 7, 100, None)
    assert (done, total) == (100, 100)  # a limit the unit does not reach: every row counted
