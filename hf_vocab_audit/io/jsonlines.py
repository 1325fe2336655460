"""A local JSON Lines file as Arrow batches, with pyarrow's JSON reader in bounded blocks.

This is the parser ``datasets``' JSON builder runs on a ``.jsonl`` file, without the builder around it
(``load_dataset`` imports torch and starts a streaming pipeline: seconds of fixed cost for a local file).
It takes only files whose every block parses to the first block's schema of plain columns; anything
else (a parse error, a new column, a type that changes, nested structs the builder would re-encode)
raises :class:`NotPlain`, and the caller reads the file with ``datasets`` instead, so both readers
give the same rows and the same types.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa

BLOCK_BYTES = 4 * 1024 * 1024  # bytes parsed at a time: memory stays flat however large the file


class NotPlain(Exception):
    """The file needs ``datasets``' full JSON builder; ``rows`` rows were already yielded."""

    def __init__(self, rows: int, why: str):
        super().__init__(why)
        self.rows = rows


def _plain(t: pa.DataType) -> bool:
    """Types the builder passes through unchanged: scalars and (nested) lists of them, no structs."""
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _plain(t.value_type)
    return (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)
            or pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_timestamp(t))


def _blocks(path: Path, block_bytes: int) -> Iterator[bytes]:
    """The file in blocks of about ``block_bytes``, each ending at a line end (as the builder chunks it)."""
    with open(path, "rb") as fh:
        while True:
            block = fh.read(block_bytes)
            if not block:
                return
            yield block + fh.readline()


def jsonl_batches(path: Path, batch_size: int, block_bytes: int | None = None) -> Iterator[pa.Table]:
    """Tables of at most ``batch_size`` rows of the JSON Lines file ``path``; NotPlain when the file is
    not a plain table (see the module's docstring).

    Each block is parsed on its own and released before the next, as the builder does (pyarrow's
    streaming reader, tried first, kept memory that grew with the file: +60 MB at 50 MB)."""
    import pyarrow.json as paj

    rows = 0
    schema: pa.Schema | None = None
    for block in _blocks(path, block_bytes or BLOCK_BYTES):
        options = paj.ReadOptions(block_size=len(block) + 1, use_threads=False)
        try:
            table = paj.read_json(pa.BufferReader(block), read_options=options)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise NotPlain(rows, str(exc)) from None
        if schema is None:
            schema = table.schema
            bad = [f.name for f in schema if not _plain(f.type)]
            if bad or not len(schema):
                raise NotPlain(0, f"columns the JSON builder converts: {', '.join(bad) or 'none'}")
        elif not table.schema.equals(schema):
            raise NotPlain(rows, "the schema changes within the file")
        for start in range(0, table.num_rows, batch_size):
            part = table.slice(start, batch_size)
            rows += part.num_rows
            yield part
        del table
    if schema is None:
        raise NotPlain(0, "no rows")
