"""``--engine ray`` on local (or shared-disk) parquet, JSON-lines and text files: plain Ray tasks, no Ray Data.

Profiled on 2 CPUs, a Ray Data ``map_batches`` task tokenized at half a local core's rate: one task ran at
a time on a 1-file split, every task unpickled the scan context with its tokenizer again, JSON went through
pandas, and Ray Data's own actors and executor shared the cores. Here each task reads one *unit* (a
line-aligned byte range of a JSON-lines or text file, or consecutive parquet row groups) with the local
engine's readers (:mod:`..io.jsonlines`, ``read_row_group``), summarises it batch by batch with
:func:`kernel.summarize` (rows counted from the unit's start) and returns one summary. The driver shifts
each by the rows of the units before it and merges them in unit order, so row numbers are the split's.
The tokenizer travels once (``ray.put``) and each worker process deserialises it once.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pyarrow as pa

from ...io.jsonlines import BadLines, NotPlain, jsonl_range_rows_and_bad_lines, text_batches
from ..chat import summarize
from ..expansion import check_batch
from ..summary import ScanContext, Summary, merge

MIN_UNIT_BYTES = 1 << 20
MAX_UNIT_BYTES = 64 << 20  # a task's span: its reader keeps only one 4 MB block in memory at a time
UNITS_PER_CPU = 16  # the cores finish together: the last unit, alone on a core, is short
WINDOW_PER_CPU = 4  # tasks in flight per CPU (bounded, so --max-rows stops early on a huge split)


@dataclass(frozen=True)
class Unit:
    """One task's share of a split: bytes [start, stop) of a text/JSON-lines file (the lines starting
    there), or row groups [start, stop) of a parquet file."""

    reader: str  # "jsonl", "text" or "parquet"
    path: str
    start: int
    stop: int


def plan_units(reader: str, files: tuple[str, ...], cpus: int) -> list[Unit]:
    """The units of a split's files, in file order: about UNITS_PER_CPU per CPU, each 1-64 MB."""
    sizes = [os.path.getsize(f) for f in files]
    target = min(max(sum(sizes) // max(cpus * UNITS_PER_CPU, 1), MIN_UNIT_BYTES), MAX_UNIT_BYTES)
    units: list[Unit] = []
    for path, size in zip(files, sizes):
        if reader == "parquet":
            units.extend(_row_group_units(path, target))
            continue
        count = max(1, -(-size // target))
        edges = [size * i // count for i in range(count + 1)]
        units.extend(Unit(reader, path, a, b) for a, b in zip(edges, edges[1:]) if b > a)
    return units


def _row_group_units(path: str, target: int) -> list[Unit]:
    """Consecutive row groups of about ``target`` bytes (uncompressed) per unit."""
    import pyarrow.parquet as pq

    with pq.ParquetFile(path) as file:
        meta = file.metadata
    units, first, size = [], 0, 0
    for i in range(meta.num_row_groups):
        size += meta.row_group(i).total_byte_size
        if size >= target:
            units.append(Unit("parquet", path, first, i + 1))
            first, size = i + 1, 0
    if first < meta.num_row_groups:
        units.append(Unit("parquet", path, first, meta.num_row_groups))
    return units


def _batches(unit: Unit, batch_size: int, schema: pa.Schema | None) -> Iterator[pa.Table | BadLines]:
    if unit.reader == "jsonl":  # lines that are not JSON rows come as BadLines (HVA533), as on the local engine
        yield from jsonl_range_rows_and_bad_lines(Path(unit.path), batch_size, start=unit.start, stop=unit.stop,
                                                  schema=schema)
    elif unit.reader == "text":
        yield from text_batches(Path(unit.path), batch_size, start=unit.start, stop=unit.stop)
    else:
        import pyarrow.parquet as pq

        with pq.ParquetFile(unit.path, pre_buffer=False) as reader:
            for i in range(unit.start, unit.stop):
                group = reader.read_row_group(i)
                for first in range(0, group.num_rows, batch_size):
                    yield group.slice(first, batch_size)


_TOKENIZER: dict[str, Any] = {}  # this worker's tokenizer, by the hex id of its object ref


def _context(ctx: ScanContext, tokenizer: list[Any]) -> ScanContext:
    """``ctx`` with its tokenizer, deserialised once per worker process (``tokenizer``: [ref] or [])."""
    if not tokenizer:
        return ctx
    key = tokenizer[0].hex()
    if key not in _TOKENIZER:
        import ray

        _TOKENIZER.clear()  # one tokenizer at a time: a long-lived worker must not collect them
        # Ray runs one task per CPU: one tokenizer thread each. A one-thread pool (read when the library
        # first runs in this process; a worker runs only this job's tasks) measured 4 % faster than
        # the library's serial path (TOKENIZERS_PARALLELISM=false).
        os.environ["RAYON_NUM_THREADS"] = "1"
        _TOKENIZER[key] = ray.get(tokenizer[0])
    return replace(ctx, tokenizer=_TOKENIZER[key])


def scan_unit(unit: Unit, ctx: ScanContext, tokenizer: list[Any], batch_size: int, limit: int | None,
              schema: pa.Schema | None) -> tuple[Summary, int, int, BadLines | None] | str:
    """The Ray task: (summary of the unit's first ``limit`` rows counted from 0, rows summarised, rows in
    the unit, the unit's lines that are not JSON rows, numbered from its first line, or None), or the reason
    the unit needs ``datasets``' JSON builder (the driver then uses Ray Data, which refuses a bad line: so
    bad lines are skipped and returned here, and the driver reports them as HVA533 at their file lines).

    Past ``limit`` the unit stops at the batch that holds its first row beyond it: the count is then only
    a lower bound, but one above ``limit``, which is all the driver asks (whether the split goes on)."""
    ctx = _context(ctx, tokenizer)
    summary, done, total = Summary(), 0, 0
    bad: list[tuple[int, str]] = []
    stopped: int | None = None
    try:
        for batch in _batches(unit, batch_size, schema):
            if isinstance(batch, BadLines):
                bad += batch.lines
                stopped = batch.stopped if batch.stopped is not None else stopped
                continue
            batch.validate(full=True)  # as the local engine: a bad offset must not read foreign memory
            check_batch(batch, unit.path, "", total)  # as the local engine: columns and dictionaries bounded
            total += batch.num_rows
            take = batch.num_rows if limit is None else min(batch.num_rows, limit - done)
            if take > 0:
                part = batch if take == batch.num_rows else batch.slice(0, take)
                summary = merge(summary, summarize(part, done, ctx))
                done += take
            if limit is not None and total > limit:
                break
    except NotPlain as exc:
        return str(exc)
    return summary, done, total, (BadLines(tuple(bad), stopped) if bad or stopped is not None else None)
