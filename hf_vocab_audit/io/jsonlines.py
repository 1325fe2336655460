"""A local JSON Lines file as Arrow batches, with pyarrow's JSON reader in bounded blocks.

This is the parser ``datasets``' JSON builder runs on a ``.jsonl`` file, without the builder around it
(``load_dataset`` imports torch and starts a streaming pipeline: seconds of fixed cost for a local file).
It takes only files whose every block parses to the first block's schema of plain columns; anything
else (a parse error, a new column, a type that changes) raises :class:`NotPlain`, and the caller reads
the file with ``datasets`` instead, so both readers give the same rows and the same types (records: see
``_plain``).

Blocks are 1 MB. The reader's peak RSS is not set by the file's size but by the allocator's warm-up over
the first few blocks (each parsed table and its Python rows freed before the next): with 4 MB blocks it
climbed for four blocks, so a 5 MB file (two blocks) peaked at 91 MB and any file past 16 MB at 109 MB
(+20%, read as "grows with the corpus"); with 1 MB blocks the climb ends within the first megabytes, at
80-81 MB for 5, 20, 50 and 100 MB, and reading is as fast (1.8 s for 50 MB of conversations).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import pyarrow as pa

from ..errors import AuditError

BLOCK_BYTES = 1024 * 1024  # bytes parsed at a time: memory stays flat however large the file (see below)
MAX_LINE_BYTES = 64 * 1024 * 1024  # one row: a file with no line end must not be read into memory whole
STEP = 1024 * 1024  # bytes read at a time while looking for a line end


class NotPlain(Exception):
    """The file needs ``datasets``' full JSON builder; ``rows`` rows were already yielded."""

    def __init__(self, rows: int, why: str):
        super().__init__(why)
        self.rows = rows


def _plain(t: pa.DataType) -> bool:
    """Types the builder passes through unchanged: scalars and (nested) lists of them; and structs of those
    (chat turns: ``messages`` as role/content records). Where the builder would store a struct as its Json
    feature instead (records whose fields differ from row to row), the values are the same JSON: the chat
    scan decodes both to the same turns (``dataset.chat_render``)."""
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _plain(t.value_type)
    if pa.types.is_struct(t):
        return t.num_fields > 0 and all(_plain(t.field(i).type) for i in range(t.num_fields))
    return (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)
            or pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_timestamp(t))


def line_blocks(path: Path, block_bytes: int, start: int = 0, stop: int | None = None) -> Iterator[bytes]:
    """The lines of ``path`` that start in bytes [start, stop), in blocks of about ``block_bytes`` that each
    end at a line end (b"\\n") or at the end of the file.

    A line belongs to the range holding its first byte, so ranges cut at any byte offsets give every
    line exactly once (a line straddling a cut is read whole by the range it starts in). Only b"\\n"
    ends a line here: it ends one under every newline convention, and never sits inside a UTF-8
    character."""
    with open(path, "rb") as fh:
        if start > 0:
            fh.seek(start - 1)
            _rest_of_line(fh, path, keep=False)  # the line holding byte start-1 belongs to the range before
        pos = fh.tell()
        while stop is None or pos < stop:
            want = block_bytes if stop is None else min(block_bytes, stop - pos)
            block = fh.read(want)
            if not block:
                return
            if not block.endswith(b"\n"):
                block += _rest_of_line(fh, path, keep=True, have=len(block))  # finish the line begun in range
            pos = fh.tell()
            yield block


def _rest_of_line(fh: BinaryIO, path: Path, *, keep: bool, have: int = 0) -> bytes:
    """Read up to and including the next b"\\n" (or the end of the file), STEP bytes at a time; the bytes
    when ``keep`` (a line, with the ``have`` bytes before it, over MAX_LINE_BYTES is refused), else b""."""
    parts: list[bytes] = []
    size = have
    while True:
        part = fh.readline(STEP)
        size += len(part)
        if keep:
            if size > MAX_LINE_BYTES:
                raise AuditError(path, f"holds a line over {MAX_LINE_BYTES} bytes (no line end where rows should be)")
            parts.append(part)
        if not part or part.endswith(b"\n"):
            return b"".join(parts)


def jsonl_batches(path: Path, batch_size: int, block_bytes: int | None = None, *, start: int = 0,
                  stop: int | None = None, schema: pa.Schema | None = None) -> Iterator[pa.Table]:
    """Tables of at most ``batch_size`` rows of the JSON Lines file ``path`` (of the lines starting in
    bytes [start, stop): see :func:`line_blocks`); NotPlain when they are not a plain table (see the
    module's docstring) or, with ``schema``, not a table of that schema.

    Each block is parsed on its own and released before the next, as the builder does (pyarrow's
    streaming reader, tried first, kept memory that grew with the file: +60 MB at 50 MB)."""
    import pyarrow.json as paj

    rows = 0
    first: pa.Schema | None = None
    for block in line_blocks(path, block_bytes or BLOCK_BYTES, start, stop):
        options = paj.ReadOptions(block_size=len(block) + 1, use_threads=False)
        try:
            table = paj.read_json(pa.BufferReader(block), read_options=options)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise NotPlain(rows, str(exc)) from None
        if not table.num_rows and stop is not None:
            continue  # blank lines only: nothing to add (a byte range may hold just those)
        if first is None:
            first = table.schema
            bad = [f.name for f in first if not _plain(f.type)]
            if bad or not len(first):
                raise NotPlain(0, f"columns the JSON builder converts: {', '.join(bad) or 'none'}")
            if schema is not None and not first.equals(schema):
                raise NotPlain(0, "the schema differs from the split's first rows")
        elif not table.schema.equals(first):
            raise NotPlain(rows, "the schema changes within the file")
        for offset in range(0, table.num_rows, batch_size):
            part = table.slice(offset, batch_size)
            rows += part.num_rows
            yield part
        del table
    if first is None and stop is None:
        raise NotPlain(0, "no rows")


def text_batches(path: Path, batch_size: int, block_bytes: int | None = None, *, start: int = 0,
                 stop: int | None = None) -> Iterator[pa.Table]:
    """Tables (one ``text`` column) of at most ``batch_size`` lines of the text file ``path`` that start
    in bytes [start, stop), as ``datasets``' text builder gives them: UTF-8, universal newlines
    (\\r\\n and \\r end a line too), line ends dropped, empty lines kept."""
    for block in line_blocks(path, block_bytes or BLOCK_BYTES, start, stop):
        text = block.decode("utf-8")
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        lines = text.split("\n")
        if text.endswith("\n"):
            lines.pop()  # the builder's readlines() has no empty line after a final newline
        for first in range(0, len(lines), batch_size):
            yield pa.table({"text": pa.array(lines[first:first + batch_size], pa.string())})
