"""Run the dataset scan on Ray (``--engine ray``): the local engine's kernel and merge, on a cluster.

Local (or shared-disk) parquet, JSON-lines and text files are scanned with plain Ray tasks over byte
ranges and row groups (:mod:`.ray_tasks`: the fast path). Other specs (``save_to_disk`` folders, other
formats, Hub datasets) and JSON lines that need ``datasets``' full JSON builder go through Ray Data:
``map_batches`` applies :func:`kernel.summarize` to every batch and the driver folds the per-batch
summaries with :func:`kernel.merge`, so the findings equal the local engine's either way.

Global row indices: rows of a ``datasets`` object carry an explicit index column (added before Ray
partitions the table), so their summaries hold global rows whatever order the batches finish in.
File readers cannot number rows inside a file, so their batches are summarised from row 0 and the
driver shifts each summary by the rows before it, with ``preserve_order`` on: Ray Data then yields
the batches in file order (the order ``datasets`` resolves the data files in, as the local engine).
"""

from __future__ import annotations

import itertools
import logging
import os
import pickle
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from ...core.options import ScanOptions
from ...errors import AuditError, first_line
from ...io.jsonlines import MAX_BAD_LINES, BadLines, bad_lines_of, copy_without_lines, first_line_at
from ..chat import summarize
from ..kernel import bad_lines_summary
from ..scan import ResolvedScan
from ..spec import ResolvedSpec
from ..summary import ScanContext, Summary, merge
from . import ScanEngine, SplitResult

INSTALL = 'pip install "hf-vocab-audit[ray]"'
INDEX = "__hva_row__"  # explicit global row index of a datasets-object split
RAY_READERS = {".parquet": "parquet", ".jsonl": "jsonl", ".txt": "text"}
FAST_READERS = ("parquet", "jsonl", "text")  # read by plain Ray tasks when the files are on a local disk
BLOCK_ROWS = 64  # datasets-object splits: at least this many batches per block, so blocks stay few


def require_ray(data: bool = False) -> None:
    """Exit 2 with the install command when Ray (``data``: Ray Data) is missing.

    Ray Data is imported only for the specs that need it: its import alone costs about a second."""
    try:
        import ray  # noqa: F401

        if data:
            import ray.data  # noqa: F401
    except ImportError:
        raise AuditError(None, f"--engine ray needs Ray Data, which is not installed: {INSTALL}") from None


@contextmanager
def ray_session(address: str | None) -> Iterator[None]:
    """Connect to ``address`` (or ``RAY_ADDRESS``), else start a quiet local instance sized to the machine.

    An instance already started in this process (a notebook, a test session) is used and left running.
    """
    import ray

    address = address or os.environ.get("RAY_ADDRESS") or None
    if address:
        _check_reachable(address)
    if ray.is_initialized():
        yield
        return
    quiet: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.ERROR, "configure_logging": True}
    try:
        if address:
            ray.init(address=address, **quiet)
        else:
            os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no usage-stats report from a scan
            ray.init(num_cpus=os.cpu_count() or 1, include_dashboard=False, **quiet)
    except Exception as exc:  # noqa: BLE001 - ray raises ConnectionError, RuntimeError, ValueError...
        where = address or "a local Ray instance"
        raise AuditError(None, f"--engine ray: cannot start or reach {where}: {first_line(exc)}") from None
    try:
        yield
    finally:
        ray.shutdown()


def _check_reachable(address: str) -> None:
    """Fail in seconds on a wrong HOST:PORT (``ray.init`` retries it for minutes, logging each try)."""
    import socket

    hostport = address.split("://", 1)[-1].rstrip("/")
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit():
        return  # "auto", "local" and other forms Ray resolves itself
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
    except OSError as exc:
        raise AuditError(None, f"--engine ray: cannot reach the Ray cluster at {address}: "
                               f"{exc.strerror or exc}") from None


# ------------------------------------------------------------------------------------ row offsets


def shift(summary: Summary, offset: int) -> Summary:
    """The summary of the same rows ``offset`` rows later in their split (every row number moved)."""
    if offset == 0:
        return summary
    violations = {
        k: replace(v, locations=tuple((row + offset, pos, val) for row, pos, val in v.locations))
        for k, v in summary.violations.items()
    }
    stats = {
        k: s if not s.uniques else replace(s, uniques={
            value: (count, row + offset, pos) for value, (count, row, pos) in s.uniques.items()})
        for k, s in summary.stats.items()
    }
    notes = {(src, split, col, row + offset, pos): note for (src, split, col, row, pos), note in summary.notes.items()}
    return Summary(dict(summary.rows), stats, violations, notes)


def _runs(index: np.ndarray) -> list[tuple[int, int]]:
    """(start, stop) slices of a batch whose index column is consecutive."""
    breaks = np.flatnonzero(np.diff(index) != 1) + 1
    edges = [0, *breaks.tolist(), len(index)]
    return list(itertools.pairwise(edges))


def summarize_batch(batch: pa.Table, ctx: ScanContext) -> pa.Table:
    """The ``map_batches`` function: one row holding the pickled summary of ``batch`` and its row count.

    With the index column the summary holds global rows ("indexed"); without, rows counted from 0.
    """
    os.environ["TOKENIZERS_PARALLELISM"] = "false"  # one tokenizer thread per task: Ray runs one per CPU
    if INDEX in batch.column_names:
        index = batch.column(INDEX).to_numpy()
        summary = Summary()
        for start, stop in _runs(index):
            summary = merge(summary, summarize(batch.slice(start, stop - start), int(index[start]), ctx))
        indexed = True
    else:
        summary, indexed = summarize(batch, 0, ctx), False
    return pa.table({"summary": pa.array([pickle.dumps(summary)], pa.binary()),
                     "rows": pa.array([batch.num_rows], pa.int64()),
                     "indexed": pa.array([indexed])})


# ---------------------------------------------------------------------------------------- reading


@dataclass(frozen=True)
class RaySource:
    """How Ray reads one split: a Ray Data file reader over ``files``, or the ``datasets`` object."""

    reader: str  # "parquet", "jsonl", "text" or "datasets"
    files: tuple[str, ...] = ()


def source_for(resolved: ResolvedSpec, split: str, config: str | None) -> RaySource:
    """The data files of ``split`` as ``datasets`` resolves them (same order as the local engine), from what
    the SPEC resolved to when the local side opened it (``spec.open_spec``: never resolved again here)."""
    from ..spec import BUILDERS

    path, builder = resolved.path, resolved.builder
    if resolved.kind in ("saved", "hub"):
        return RaySource("datasets")  # a save_to_disk folder, or a Hub dataset (its cache)
    reader = RAY_READERS.get(path.suffix.lower())
    if resolved.kind == "file" and reader:
        return RaySource(reader, (str(path),))  # one file: no need to ask datasets (its import costs 1 s)
    if resolved.kind == "glob" and builder == "parquet" and not resolved.spec.lower().endswith(".gz"):
        return RaySource("parquet", tuple(str(p) for p in sorted(resolved.files)))  # as spec.open_spec reads them
    if resolved.kind in ("glob", "file"):
        args: tuple[Any, ...] = (builder,)
        kwargs: dict[str, Any] = {"data_files": {"train": str(path)}}
    else:
        args, kwargs = (str(path), config), {}
    import datasets

    try:
        data = datasets.load_dataset_builder(*args, **kwargs)
        files = tuple(str(f) for f in (data.config.data_files or {}).get(split, ()))
    except Exception:  # noqa: BLE001 - the local engine opened it; fall back to its datasets object
        return RaySource("datasets")
    readers = {RAY_READERS.get(Path(f).suffix.lower()) for f in files}
    one = readers.pop() if len(readers) == 1 else None
    if one is not None and BUILDERS.get(Path(files[0]).suffix.lower()) == data.name:
        return RaySource(one, files)
    return RaySource("datasets")


def _datasets_table(resolved: ResolvedSpec, split: str, config: str | None) -> pa.Table:
    """The split as one Arrow table (memory-mapped by ``datasets``), for specs Ray has no reader for."""
    import datasets

    path = resolved.path
    if resolved.kind == "saved":
        loaded: Any = datasets.load_from_disk(str(path))
        ds = loaded[split] if isinstance(loaded, datasets.DatasetDict) else loaded
    elif resolved.kind in ("glob", "file"):
        ds = datasets.load_dataset(resolved.builder, data_files={"train": str(path)})[split]
    else:
        ds = datasets.load_dataset(str(path) if resolved.kind == "folder" else resolved.spec, config)[split]
    return ds.with_format("arrow")[:]


def read_split(resolved: ResolvedSpec, split: str, config: str | None, batch_size: int,
               files_read: tuple[str, ...] | None = None) -> Any:
    """A Ray Dataset of one split: Ray Data's file readers, or the datasets table with an index column.
    ``files_read``: the files to read in place of the split's own (a JSON Lines file without its bad lines)."""
    import ray.data

    src = source_for(resolved, split, config)
    files = list(files_read if files_read is not None else src.files)
    if src.reader == "parquet":
        return ray.data.read_parquet(files, file_extensions=None, partitioning=None)
    if src.reader == "jsonl":
        return ray.data.read_json(files, lines=True, file_extensions=None,
                                  partitioning=None)  # type: ignore[arg-type]  # None: no path partitioning (ray's own default for parquet)
    if src.reader == "text":  # the local engine keeps empty lines
        return ray.data.read_text(files, drop_empty_lines=False, file_extensions=None)
    table = _datasets_table(resolved, split, config)
    table = table.append_column(INDEX, pa.array(np.arange(table.num_rows, dtype=np.int64)))
    step = max(batch_size * BLOCK_ROWS, 1)
    blocks = [table.slice(i, step) for i in range(0, table.num_rows, step)] or [table]
    return ray.data.from_arrow(blocks)


# ---------------------------------------------------------------------------------------- the scan


@contextmanager
def _data_context() -> Iterator[None]:
    """Ray Data settings for the scan (restored afterwards: the process may use Ray Data for more)."""
    import ray.data

    ctx = ray.data.DataContext.get_current()
    settings = {
        "enable_progress_bars": False,  # the audit has its own progress line
        "print_on_execution_start": False,
        # The DataSourceV2 parquet reader adds a file-listing stage that cost 3-10 s per read here
        # (2 loaded cores) against 0.3-0.9 s for V1; both read files in order.
        "use_datasource_v2": False,
    }
    saved = {k: getattr(ctx, k, None) for k in settings}
    saved_order = bool(ctx.execution_options.preserve_order)
    for k, v in settings.items():
        setattr(ctx, k, v)
    ctx.execution_options.preserve_order = True  # file readers: batches come back in file order
    for name in ("ray", "ray.data"):
        logging.getLogger(name).setLevel(logging.ERROR)
    try:
        yield
    finally:
        for k, old in saved.items():
            setattr(ctx, k, old)
        ctx.execution_options.preserve_order = saved_order


def scan_split(resolved: ResolvedSpec, split: str, ctx: ScanContext, *, config: str | None, batch_size: int,
               max_rows: int | None, num_rows: int | None, bar: Any = None, schema: pa.Schema | None = None,
               tokenizer: Any = None) -> tuple[Summary, int, bool]:
    """Scan one split on Ray: (merged summary, rows scanned, stopped at ``max_rows``).

    ``schema``: the split's first batch as the local engine read it (JSON lines of another schema go
    through Ray Data); ``tokenizer``: the object ref of ``ctx.tokenizer`` (put once per scan)."""
    src = source_for(resolved, split, config)
    if src.reader in FAST_READERS and src.files and all(os.path.isfile(f) for f in src.files):
        done = scan_files(src, ctx, tokenizer=tokenizer, batch_size=batch_size, max_rows=max_rows,
                          schema=schema if src.reader == "jsonl" else None, bar=bar)
        if done is not None:
            return done
    require_ray(data=True)
    with _data_context():
        return _scan_ray_data(resolved, split, ctx, config=config, batch_size=batch_size, max_rows=max_rows,
                              num_rows=num_rows, bar=bar)


def scan_files(src: RaySource, ctx: ScanContext, *, tokenizer: Any, batch_size: int, max_rows: int | None,
               schema: pa.Schema | None, bar: Any = None) -> tuple[Summary, int, bool] | None:
    """The fast path: Ray tasks over the units of ``src``'s files, folded in order; None when a unit needs
    ``datasets``' JSON builder (the caller then scans the split with Ray Data)."""
    import ray

    from .ray_tasks import WINDOW_PER_CPU, plan_units, scan_unit

    cpus = max(int(ray.cluster_resources().get("CPU", 1)), 1)
    units = plan_units(src.reader, src.files, cpus)
    task = ray.remote(num_cpus=1)(scan_unit)
    bare = replace(ctx, tokenizer=None)  # the tokenizer travels once, by reference
    refs = [tokenizer] if ctx.tokenizer is not None else []
    pending: dict[Any, int] = {}
    results: dict[int, Any] = {}
    summary, rows, truncated, submitted, folded = Summary(), 0, False, 0, 0
    bad = _BadLinesOfUnits()

    def submit(i: int, limit: int | None) -> None:
        pending[task.remote(units[i], bare, refs, batch_size, limit, schema)] = i

    try:
        while folded < len(units):
            while submitted < len(units) and len(pending) < WINDOW_PER_CPU * cpus:
                submit(submitted, None if max_rows is None else max(max_rows - rows, 0))  # a bound: rows
                submitted += 1  # before a later unit are at least the rows folded so far
            while folded not in results:
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    results[pending.pop(ref)] = out = _get(ref)
                    if isinstance(out, str):  # not a plain table: Ray Data reads the split as datasets would
                        if bar is not None:
                            bar.restart()
                        return None
            part, done, total, unit_bad = results.pop(folded)
            if unit_bad is not None:
                bad.add(units[folded].path, units[folded].start, unit_bad)
            room = None if max_rows is None else max_rows - rows
            if room is not None and total > room:
                truncated = True
                if done > room:  # summarised past max_rows: summarise exactly the rows that fit
                    part, done = (Summary(), 0) if room == 0 else _get(
                        task.remote(units[folded], bare, refs, batch_size, room, schema))[:2]
            if done:
                summary = merge(summary, shift(part, rows))
                rows += done
                if bar is not None:
                    bar.advance(done, summary)
            folded += 1
            if truncated:
                break
        return bad.reported(summary, ctx), rows, truncated
    finally:
        for ref in pending:
            ray.cancel(ref)


class _BadLinesOfUnits:
    """The lines the units skipped as not JSON rows, at their lines in the file (a unit numbers them from its
    first line), reported as the local engine reports them: HVA533, at most MAX_BAD_LINES, where a reader
    stopped the line it stopped at."""

    def __init__(self) -> None:
        self.lines: list[tuple[int, str]] = []
        self.stopped: int | None = None

    def add(self, path: str, start: int, unit: BadLines) -> None:
        first = first_line_at(Path(path), start) - 1  # lines before the unit (one pass, only for a bad unit)
        self.lines += [(first + k, message) for k, message in unit.lines]
        if unit.stopped is not None and self.stopped is None:
            self.stopped = first + unit.stopped

    def reported(self, summary: Summary, ctx: ScanContext) -> Summary:
        if not self.lines and self.stopped is None:
            return summary
        lines = tuple(self.lines[:MAX_BAD_LINES])
        stopped = self.stopped
        if len(self.lines) >= MAX_BAD_LINES:
            stopped = lines[-1][0] if stopped is None else min(stopped, lines[-1][0])
        return merge(summary, bad_lines_summary(BadLines(lines, stopped), ctx))


def _get(ref: Any) -> Any:
    """``ray.get``, re-raising a task's own AuditError as itself (a one-line message, exit 2)."""
    import ray

    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as exc:
        if isinstance(exc.cause, AuditError):
            raise exc.cause from None
        raise


def _scan_ray_data(resolved: ResolvedSpec, split: str, ctx: ScanContext, *, config: str | None, batch_size: int,
                   max_rows: int | None, num_rows: int | None, bar: Any = None) -> tuple[Summary, int, bool]:
    """Scan one split with Ray Data's readers and ``map_batches`` (specs the fast path does not take).

    Ray Data's JSON reader, like ``datasets``' builder, refuses a file at its first line that is not a JSON
    row; a JSON Lines file with such lines is read from a copy without them (on the driver's temporary disk,
    at most the file's size), and they are reported as HVA533 at their lines, as the local engine does."""
    src = source_for(resolved, split, config)
    with tempfile.TemporaryDirectory(prefix="hva-ray-jsonl-") as tmp:
        bad = _BadLinesOfUnits()
        files_read = None
        if src.reader == "jsonl" and resolved.kind == "file" and len(src.files) == 1:
            found = bad_lines_of(Path(src.files[0]))
            if found is not None:
                copy = Path(tmp) / "train.jsonl"
                copy_without_lines(Path(src.files[0]), found, copy)
                files_read = (str(copy),)
                bad.add(src.files[0], 0, found)
        summary, rows, truncated = _scan_ray_dataset(read_split(resolved, split, config, batch_size, files_read),
                                                     ctx, batch_size=batch_size, max_rows=max_rows,
                                                     num_rows=num_rows, bar=bar)
    return bad.reported(summary, ctx), rows, truncated


def _scan_ray_dataset(ds: Any, ctx: ScanContext, *, batch_size: int, max_rows: int | None, num_rows: int | None,
                      bar: Any) -> tuple[Summary, int, bool]:
    truncated = False
    if max_rows is not None:
        truncated = num_rows > max_rows if num_rows is not None else ds.limit(max_rows + 1).count() > max_rows
        ds = ds.limit(max_rows)
    summaries = ds.map_batches(summarize_batch, fn_kwargs={"ctx": ctx}, batch_format="pyarrow",
                               batch_size=batch_size, zero_copy_batch=True)
    summary, rows = Summary(), 0
    for out in summaries.iter_batches(batch_format="pyarrow", batch_size=None):
        for blob, n, indexed in zip(out.column("summary").to_pylist(), out.column("rows").to_pylist(),
                                    out.column("indexed").to_pylist()):
            part = pickle.loads(blob)  # our own workers' summaries, not user data
            summary = merge(summary, part if indexed else shift(part, rows))
            rows += n
            if bar is not None:
                bar.advance(n, summary)
    return summary, rows, truncated


def scan_with_ray(opened: Sequence[Any], contexts: Sequence[ScanContext], opts: Any) -> list[tuple[Summary, int, bool]]:
    """The Ray engine behind ``scan.scan``: one (summary, rows, truncated) per opened split."""
    require_ray()
    from ..progress import ProgressBar

    results = []
    with ray_session(opts.ray_address):
        import ray

        tokenizers: dict[int, Any] = {}  # id(tokenizer) -> its object ref: put once for every split
        for o, ctx in zip(opened, contexts):
            if ctx.tokenizer is not None and id(ctx.tokenizer) not in tokenizers:
                tokenizers[id(ctx.tokenizer)] = ray.put(ctx.tokenizer)
            resolved = o.split.resolved
            if resolved is None:  # a live datasets object (refused with the options) has no SPEC
                raise AuditError(o.split.source, "the Ray engine reads data files and Hub datasets")
            kwargs = {"config": o.split.config or opts.config, "batch_size": opts.batch_size, "max_rows": opts.max_rows,
                      "num_rows": o.split.num_rows, "schema": o.first.schema if o.first is not None else None,
                      "tokenizer": tokenizers.get(id(ctx.tokenizer))}
            try:
                if opts.progress:
                    with ProgressBar(f"{o.split.name} (ray)", o.split.num_rows) as bar:
                        results.append(scan_split(resolved, o.split.split_name, ctx, bar=bar, **kwargs))
                else:
                    results.append(scan_split(resolved, o.split.split_name, ctx, **kwargs))
            except AuditError:
                raise
            except Exception as exc:  # noqa: BLE001 - Ray wraps reader and task errors
                raise AuditError(o.split.source, f"split {o.split.name!r}: the Ray scan failed: "
                                                 f"{_ray_cause(exc)}") from None
    return results


def _ray_cause(exc: BaseException) -> str:
    """The first line of the innermost error Ray wrapped (a reader's parse error, not Ray's frame)."""
    cause: BaseException = exc
    while True:
        inner = getattr(cause, "cause", None) or cause.__cause__
        if not isinstance(inner, BaseException):
            break
        cause = inner
    return f"{cause.__class__.__name__}: {first_line(cause)}"


class RayEngine(ScanEngine):
    """On Ray (``ray_address``, else ``RAY_ADDRESS``, else a local instance): pip install 'hf-vocab-audit[ray]'."""

    name = "ray"

    def check(self, options: ScanOptions) -> None:
        require_ray()  # before reading anything: exit 2 with the install command

    def scan(self, resolved: ResolvedScan, options: ScanOptions) -> list[SplitResult]:
        return scan_with_ray(resolved.opened, resolved.contexts, options)
