"""Local text data files that expand past what their size says, checked before any reader parses them.

``datasets`` reads ``.json``, ``.csv``, ``.txt`` and every ``.gz`` itself, so the line bound of
:mod:`..io.jsonlines` (plain ``.jsonl`` only) did not reach them: one gzip member holding a 3 GiB line
exhausted memory, a row nested 500,000 deep crashed pyarrow's JSON reader (SIGSEGV), and a CSV header of
300,000 columns made the builder allocate per column. One streaming pass over the decompressed bytes, in
1 MB reads, refuses a line over :data:`MAX_LINE_BYTES`, a JSON line nested deeper than
:data:`MAX_JSON_DEPTH` (measured before the parser: :class:`..io.json_depth.LineDepth`) and a CSV header
of more than :data:`MAX_COLUMNS` columns, each naming the file.
"""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path
from typing import Any

from ..errors import AuditError, first_line
from ..io.json_depth import MAX_JSON_DEPTH, LineDepth
from ..io.jsonlines import MAX_LINE_BYTES, STEP

MAX_COLUMNS = 10_000  # of a data file or an Arrow batch; real datasets have tens
TEXT_KINDS = {".jsonl": "json", ".json": "json", ".csv": "csv", ".tsv": "csv", ".txt": "text"}


def text_kind(path: Path) -> str | None:
    """"json", "csv" or "text" for a text data file (compressed or not), else None."""
    name = path.name.lower().removesuffix(".gz")
    return next((kind for ext, kind in TEXT_KINDS.items() if name.endswith(ext)), None)


def check_text_file(path: Path) -> None:
    """Refuse a text data file whose decompressed lines, nesting or header columns are unbounded."""
    if path.name.lower().endswith(".arrow"):
        check_arrow_file(path)
        return
    kind = text_kind(path)
    if kind is None:
        return
    compressed = path.name.lower().endswith(".gz")
    depth = LineDepth(MAX_JSON_DEPTH) if kind == "json" else None
    header: list[bytes] | None = [] if kind == "csv" else None
    line = 0  # bytes of the current line so far
    try:
        with (gzip.open(path, "rb") if compressed else open(path, "rb")) as fh:
            while chunk := fh.read(STEP):
                end = chunk.rfind(b"\n")
                if end < 0:
                    line += len(chunk)
                elif line + chunk.find(b"\n") > MAX_LINE_BYTES:
                    line += chunk.find(b"\n")  # the line that ends in this chunk
                else:
                    line = len(chunk) - end - 1  # lines wholly inside a chunk are shorter than the chunk
                if line > MAX_LINE_BYTES:
                    raise AuditError(path, f"holds a line over {MAX_LINE_BYTES} bytes"
                                           f"{' once decompressed' if compressed else ''} (no line end where rows "
                                           "should be)")
                if depth is not None and depth.feed(chunk) > MAX_JSON_DEPTH:
                    raise AuditError(path, f"holds JSON nested deeper than {MAX_JSON_DEPTH} levels (refused "
                                           "before the JSON parser recurses into it)")
                if header is not None:
                    header.append(chunk)
                    if b"\n" in chunk or sum(map(len, header)) > MAX_LINE_BYTES:
                        _check_header(path, b"".join(header).split(b"\n", 1)[0])
                        header = None
            if header is not None:
                _check_header(path, b"".join(header))
    except (OSError, EOFError, zlib.error) as exc:  # gzip.BadGzipFile is an OSError
        raise AuditError(path, f"cannot be read{' as gzip' if compressed else ''}: {exc}") from None


def check_folder(folder: Path) -> None:
    """:func:`check_text_file` for every text data file under ``folder`` (already checked: no links)."""
    import os

    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            check_text_file(Path(root) / name)


def _check_header(path: Path, first_line: bytes) -> None:
    """At most MAX_COLUMNS columns: counted by separators (an upper bound when a quoted name holds one)."""
    sep = b"\t" if path.name.lower().removesuffix(".gz").endswith(".tsv") else b","
    columns = first_line.count(sep) + 1
    if columns > MAX_COLUMNS:
        raise AuditError(path, f"has {columns} columns in its header, over the {MAX_COLUMNS} limit")


MAX_DECODED_BATCH_BYTES = 512 * 1024 * 1024  # of one batch's dictionary columns once decoded


def check_arrow_file(path: Path) -> None:
    """Every record batch of an Arrow file given as data (``datasets``' Arrow builder decodes its dictionary
    columns while it reads) through :func:`check_batch`, from a memory map: nothing decoded, nothing copied."""
    import pyarrow as pa

    try:
        with pa.memory_map(str(path)) as source:
            try:
                reader: Any = pa.ipc.open_stream(source)
                batches = iter(reader)
            except pa.ArrowInvalid:
                source.seek(0)
                reader = pa.ipc.open_file(source)
                batches = (reader.get_batch(i) for i in range(reader.num_record_batches))
            row = 0
            for batch in batches:
                check_batch(batch, str(path), "train", row)
                row += batch.num_rows
    except AuditError:
        raise
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several kinds for a damaged file
        raise AuditError(path, f"is not a valid Arrow file: {first_line(exc)}") from None


def check_batch(batch: object, source: str, split: str, row: int) -> None:
    """Refuse a batch with more than MAX_COLUMNS columns, or whose dictionary-encoded columns decode to more
    than MAX_DECODED_BATCH_BYTES: one 8 MB dictionary value referenced by every row is 8 GB per 1,000 rows."""
    import pyarrow as pa
    import pyarrow.compute as pc

    assert isinstance(batch, (pa.Table, pa.RecordBatch))
    where = f"split {split!r}, rows after {row}"
    if batch.num_columns > MAX_COLUMNS:
        raise AuditError(source, f"{where}: {batch.num_columns} columns, over the {MAX_COLUMNS} limit")
    decoded = 0
    for name, column in zip(batch.column_names, batch.columns):
        if not pa.types.is_dictionary(column.type):
            continue
        chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
        for chunk in chunks:
            values, indices = chunk.dictionary, chunk.indices
            if not len(values) or not len(indices):
                continue
            value_type = values.type
            if pa.types.is_string(value_type) or pa.types.is_binary(value_type) \
                    or pa.types.is_large_string(value_type) or pa.types.is_large_binary(value_type):
                sizes = pc.binary_length(values)
                decoded += int(pc.sum(pc.take(sizes, indices.fill_null(0))).as_py() or 0)
            else:
                decoded += len(indices) * -(-values.nbytes // len(values))
        if decoded > MAX_DECODED_BATCH_BYTES:
            raise AuditError(source, f"{where}: column {name!r} is dictionary-encoded and decodes to over "
                                     f"{MAX_DECODED_BATCH_BYTES} bytes per batch (refused before it is expanded)")
