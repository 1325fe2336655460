"""Open a dataset SPEC as named splits that stream Arrow batches.

SPEC: a data file or glob (``.jsonl``, ``.json``, ``.csv``, ``.parquet``, ``.txt``, ``.arrow``), a folder
of data files whose names give the splits (as ``load_dataset`` infers them), a ``save_to_disk`` folder
(Dataset or DatasetDict), or a Hub dataset id (the local cache when offline). Local data is read in
streaming mode, so memory stays flat however large the files are.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from ..errors import AuditError, first_line
from ..facts.tree import check_tree, regular_file_inside
from ..io.jsonfile import MAX_CONFIG_BYTES, read_bytes
from ..io.jsonlines import BadLines, NotPlain, bad_lines_of, copy_without_lines, jsonl_rows_and_bad_lines
from .expansion import check_folder, check_text_file
from .folder_guard import GLOB_CHARS, check_readme_configs, expand_glob, readme_config_names, regular_data_file

BUILDERS = {".jsonl": "json", ".json": "json", ".csv": "csv", ".tsv": "csv", ".parquet": "parquet",
            ".txt": "text", ".arrow": "arrow"}  # fmt: skip


@dataclass(frozen=True)
class Split:
    """One split of one dataset: its name, declared features and a batch iterator factory."""

    source: str
    name: str
    features: Any  # datasets.Features or None
    num_rows: int | None
    # Arrow batches; a JSON Lines file's lines that are not JSON rows come as BadLines between them
    batches: Callable[[int], Iterator[pa.Table | BadLines]] = field(repr=False, compare=False)
    resolved: ResolvedSpec | None = field(default=None, repr=False, compare=False)  # what open_spec found
    config: str | None = None  # the README config it is in, when a folder's configs are all opened (``name``
    # is then ``config/split``)

    @property
    def split_name(self) -> str:
        """The split's own name in its config (what ``load_dataset(..., config)[split]`` calls it)."""
        return self.name[len(self.config) + 1:] if self.config is not None else self.name


@dataclass(frozen=True)
class ResolvedSpec:
    """What a SPEC names, decided once by :func:`open_spec` (engines read it; none resolves the SPEC again).

    ``kind``: ``glob``, ``saved`` (a ``save_to_disk`` folder), ``folder`` (data files whose names give the
    splits), ``file`` or ``hub``; ``builder``: the ``datasets`` builder of its data files (json, csv,
    parquet, text, arrow; None for saved folders, folders and Hub ids); ``files``: what a glob matched."""

    spec: str
    kind: str
    path: Path
    builder: str | None = None
    files: tuple[Path, ...] = ()


def _quiet() -> None:
    import datasets

    datasets.logging.set_verbosity(datasets.logging.CRITICAL)  # read errors become one-line AuditErrors
    datasets.disable_progress_bars()


def _iterable_batches(ds: Any) -> Callable[[int], Iterator[pa.Table]]:
    def batches(batch_size: int) -> Iterator[pa.Table]:
        yield from ds.with_format("arrow").iter(batch_size=batch_size)

    return batches


def _arrow_file_batches(files: list[Path]) -> Callable[[int], Iterator[pa.Table]]:
    """Batches of ``save_to_disk`` Arrow stream files, memory-mapped: the batches are views of the file's
    pages (no copy into the process) and the kernel reads the flat values buffers where they lie. Each record
    batch is still validated in full before it is read."""

    def batches(batch_size: int) -> Iterator[pa.Table]:
        for path in files:
            source, release = _mapped(path)
            try:
                reader = pa.ipc.open_stream(source)
            except pa.ArrowInvalid:
                reader = pa.ipc.open_file(source)
                for i in range(reader.num_record_batches):
                    batch = reader.get_batch(i)
                    yield from _rechunk(_validated(batch, path), batch_size)
                continue
            for record_batch in reader:
                yield from _rechunk(_validated(record_batch, path), batch_size)
                release(source.tell())

    return batches


def _mapped(path: Path) -> tuple[pa.NativeFile, Callable[[int], None]]:
    """``path`` as a zero-copy Arrow input, and a function that drops this process's pages of the file before
    an offset once their batches are scanned (``MADV_DONTNEED``: read-only pages of a file, read again from
    the page cache if touched again). Without it a scan's resident memory grows by every page it reads, up
    to the size of the file; with it, by about one record batch."""
    import mmap

    if not hasattr(mmap, "MADV_DONTNEED") or path.stat().st_size == 0:  # Windows; an empty file cannot be mapped
        return pa.OSFile(str(path)), lambda _offset: None
    with open(path, "rb") as fh:
        mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)  # closed when the last batch is collected
    released = 0

    def release(offset: int) -> None:
        nonlocal released
        end = offset - offset % mmap.PAGESIZE
        if end > released:
            mapped.madvise(mmap.MADV_DONTNEED, released, end - released)
            released = end

    return pa.BufferReader(pa.py_buffer(mapped)), release


def _validated(record_batch: pa.RecordBatch, path: Path) -> pa.RecordBatch:
    """A batch whose offsets and buffers agree (an unvalidated one lets a reader past its buffers)."""
    try:
        record_batch.validate(full=True)
    except (pa.ArrowInvalid, pa.ArrowException) as exc:
        raise AuditError(path, f"is not a valid Arrow stream: {first_line(exc)}") from None
    return record_batch


def _rechunk(record_batch: pa.RecordBatch, batch_size: int) -> Iterator[pa.Table]:
    for start in range(0, record_batch.num_rows, batch_size):
        yield pa.Table.from_batches([record_batch.slice(start, batch_size)])


def _parquet(files: list[Path], source: str) -> list[Split]:
    """Local parquet files read row group by row group with pyarrow (bounded memory, no copy)."""
    import pyarrow.parquet as pq

    try:
        first = pq.ParquetFile(str(files[0]))
        features = _schema_features(first.schema_arrow)
        rows = sum(pq.ParquetFile(str(f)).metadata.num_rows for f in files)
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several kinds for a bad file
        raise AuditError(source, f"cannot read parquet: {first_line(exc)}") from None

    def groups() -> Iterator[Callable[[], pa.Table]]:
        for path in files:
            reader = pq.ParquetFile(str(path), pre_buffer=False)
            for i in range(reader.num_row_groups):
                yield functools.partial(reader.read_row_group, i)

    def batches(batch_size: int) -> Iterator[pa.Table]:
        for group in _read_ahead(groups()):
            for start in range(0, group.num_rows, batch_size):
                yield group.slice(start, batch_size)

    return [Split(source, "train", features, rows, batches)]


def _read_ahead(reads: Iterator[Callable[[], pa.Table]]) -> Iterator[pa.Table]:
    """Row groups in order, the next one read and decoded on a second thread while the caller scans this
    one (pyarrow releases the GIL): two row groups in memory at most, one core each. One group at a time,
    not ``iter_batches``, whose read-ahead grows with the file."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="hva-parquet") as pool:
        ahead = None
        for read in reads:
            current, ahead = ahead, pool.submit(read)
            if current is not None:
                yield current.result()
        if ahead is not None:
            yield ahead.result()


def _schema_features(schema: pa.Schema) -> Any:
    """The ``datasets`` features of a file's Arrow schema when they can name classes, else None.

    Only ``ClassLabel`` features change a column's plan (``roles.plan_columns``), and only the schema's
    ``huggingface`` metadata can declare one: without it, importing ``datasets`` (0.8 s, more when it
    imports torch) would buy nothing."""
    metadata = schema.metadata or {}
    if b"ClassLabel" not in metadata.get(b"huggingface", b""):
        return None
    from datasets import Features

    return Features.from_arrow_schema(schema)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(read_bytes(path, MAX_CONFIG_BYTES).decode("utf-8"))
    except (OSError, ValueError) as exc:
        raise AuditError(path, f"cannot read: {first_line(exc)}") from None
    if not isinstance(data, dict):
        raise AuditError(path, "must be a JSON object")
    return data


def _saved_split(folder: Path, source: str, name: str) -> Split:
    """One folder written by ``Dataset.save_to_disk``."""
    state = _read_json(folder / "state.json")
    info = _read_json(folder / "dataset_info.json") if (folder / "dataset_info.json").exists() else {}
    files = []
    for entry in state.get("_data_files") or []:
        filename = entry.get("filename") if isinstance(entry, dict) else None
        if not isinstance(filename, str) or "/" in filename or "\\" in filename:
            raise AuditError(folder / "state.json", f"bad _data_files entry {entry!r}"[:200])
        path = folder / filename
        if not path.is_file() and not path.is_symlink():
            raise AuditError(path, "is listed in state.json but missing")
        files.append(regular_file_inside(path, folder, "dataset folder"))
    features = None
    if isinstance(info.get("features"), dict) and "ClassLabel" in json.dumps(info["features"]):
        from datasets import Features  # only ClassLabel features change a plan (see _schema_features)

        try:
            features = Features.from_dict(info["features"])
        except Exception as exc:  # noqa: BLE001 - a malformed features block
            raise AuditError(folder / "dataset_info.json", f"bad features: {first_line(exc)}") from None
    rows = None
    splits = info.get("splits")
    if isinstance(splits, dict):
        entry = splits.get(name) or next(iter(splits.values()), None)
        rows = entry.get("num_examples") if isinstance(entry, dict) else None
    return Split(source, name, features, rows if isinstance(rows, int) else None, _arrow_file_batches(files))


def _saved(path: Path, source: str) -> list[Split]:
    if (path / "dataset_dict.json").exists():
        names = _read_json(path / "dataset_dict.json").get("splits")
        if not isinstance(names, list) or not all(isinstance(n, str) and Path(n).name == n and n not in (".", "..")
                                                  and "\\" not in n for n in names):  # a plain folder name
            raise AuditError(path / "dataset_dict.json", '"splits" must be a list of split names')
        return [_saved_split(path / n, source, n) for n in names]
    state = _read_json(path / "state.json")
    split = state.get("_split")
    name = split if isinstance(split, str) else "train"
    return [_saved_split(path, source, name)]


def _load(source: str, *args: Any, **kwargs: Any) -> list[Split]:
    import datasets

    _quiet()
    try:
        loaded = datasets.load_dataset(*args, **kwargs)
    except (FileNotFoundError, datasets.exceptions.DatasetNotFoundError) as exc:
        raise AuditError(source, f"cannot open the dataset: {first_line(exc)}") from None
    except ConnectionError as exc:
        raise AuditError(source, f"cannot reach the Hugging Face Hub and the dataset is not cached "
                                 f"({first_line(exc)})") from None
    except StopIteration:  # datasets' builders infer the columns from the first rows: there were none
        raise AuditError(source, "holds no rows to scan (an empty data file): nothing would be checked") from None
    except Exception as exc:  # noqa: BLE001 - datasets raises many kinds for unreadable input
        raise AuditError(source, f"cannot open the dataset: {exc.__class__.__name__}: {first_line(exc)}") from None
    out = []
    for name, ds in loaded.items():
        rows = getattr(ds, "num_rows", None)
        out.append(Split(source, str(name), ds.features, rows if isinstance(rows, int) else None,
                         _iterable_batches(ds)))
    return out


def _folder_configs(spec: str, path: Path, config: str | None) -> list[Split]:
    """The splits of a data folder: of the config the operator named, else of every config its README declares.

    ``load_dataset(folder)`` opens only the default config (or refuses to choose between several), so a default
    that silently skipped the others would let a second config's bad ids through: each is opened, its splits
    named ``config/split``."""
    names = readme_config_names(path) if config is None else []
    if len(names) < 2:
        return _load(spec, str(path), config, streaming=True)
    return [dataclasses.replace(s, name=f"{name}/{s.name}", config=name)
            for name in names for s in _load(spec, str(path), name, streaming=True)]


def _jsonl(path: Path, source: str) -> Split:
    """A local JSON Lines file: split "train", as ``load_dataset("json", data_files=...)`` names it.

    Read with pyarrow's JSON parser directly (what the builder runs), and with ``datasets`` itself from
    the first row the fast reader cannot take as it is (:mod:`..io.jsonlines`), so the rows and types
    are the builder's either way."""

    def batches(batch_size: int) -> Iterator[pa.Table | BadLines]:
        reported: set[int] = set()
        try:
            for item in jsonl_rows_and_bad_lines(path, batch_size):
                if isinstance(item, BadLines):
                    reported.update(k for k, _ in item.lines)
                yield item
            return
        except NotPlain as exc:
            done = exc.rows
        # datasets' JSON builder refuses the whole file at its first bad line: it reads a copy without them
        # (on the temporary disk, at most the file's size, only for such a file), and they are reported at
        # their lines in the original, after its first rows, as the fast reader does.
        bad = bad_lines_of(path)
        with tempfile.TemporaryDirectory(prefix="hva-jsonl-") as tmp:
            readable = path
            if bad is not None:
                readable = Path(tmp) / "train.jsonl"
                copy_without_lines(path, bad, readable)
            (split,) = _load(source, "json", data_files={"train": str(readable)}, streaming=True)
            left = () if bad is None else tuple(b for b in bad.lines if b[0] not in reported)
            pending = BadLines(left, bad.stopped) if bad is not None and (left or bad.stopped) else None
            shown = done > 0  # a table has been yielded: the split's schema is planned
            for table in split.batches(batch_size):
                if isinstance(table, BadLines):  # not from datasets' reader
                    continue
                if done >= table.num_rows:
                    done -= table.num_rows
                else:
                    yield table.slice(done) if done else table
                    done, shown = 0, True
                if pending is not None and shown:
                    yield pending
                    pending = None
            if pending is not None:
                yield pending

    return Split(source, "train", None, None, batches)


def _builder_for(path: str) -> str:
    lower = path.lower()
    for ext, builder in BUILDERS.items():
        if lower.endswith((ext, ext + ".gz")):
            return builder
    raise AuditError(path, f"unknown data file type; use one of {', '.join(sorted(BUILDERS))}")


def open_spec(spec: str, config: str | None = None) -> list[Split]:
    """The splits of ``spec``, each able to stream Arrow batches, and each carrying what ``spec`` resolved to."""
    splits, resolved = _open_spec(spec, config)
    return [dataclasses.replace(s, resolved=resolved) for s in splits]


def _open_spec(spec: str, config: str | None) -> tuple[list[Split], ResolvedSpec]:
    path = Path(os.path.expanduser(spec))
    if any(c in spec for c in GLOB_CHARS):
        builder = _builder_for(spec)
        files = expand_glob(os.path.expanduser(spec))  # never through a link: three self-links are 3^depth paths
        if not files:
            raise AuditError(spec, "matches no file")
        for file in files:
            check_text_file(file)  # decompressed lines, JSON depth, CSV columns: before any parser
        resolved = ResolvedSpec(spec, "glob", path, builder, tuple(files))
        if builder == "parquet" and not spec.lower().endswith(".gz"):
            return _parquet(files, spec), resolved
        return _load(spec, builder, data_files={"train": [str(f) for f in files]}, streaming=True), resolved
    if path.is_dir():
        check_tree(path, "dataset folder")  # FIFOs (a read that never returns), devices, links out
        if (path / "dataset_dict.json").exists() or (path / "state.json").exists():
            return _saved(path, spec), ResolvedSpec(spec, "saved", path)
        check_readme_configs(path)  # data_files that are URLs or leave the folder
        check_folder(path)
        return _folder_configs(spec, path, config), ResolvedSpec(spec, "folder", path)
    if path.exists():
        regular_data_file(path)
        if not os.access(path, os.R_OK):
            raise AuditError(path, "is not readable")
        check_text_file(path)
        builder = _builder_for(spec)
        resolved = ResolvedSpec(spec, "file", path, builder)
        if builder == "parquet" and path.suffix.lower() == ".parquet":
            return _parquet([path], spec), resolved
        if path.suffix.lower() == ".jsonl":
            return [_jsonl(path, spec)], resolved
        return _load(spec, builder, data_files={"train": str(path)}, streaming=True), resolved
    looks_local = spec.startswith((".", "/", "~")) or spec.count("/") > 1 or Path(spec).suffix.lower() in BUILDERS
    if looks_local:
        raise AuditError(spec, "does not exist")
    return _load(spec, spec, config), ResolvedSpec(spec, "hub", path)  # a Hub id: the cache when offline
