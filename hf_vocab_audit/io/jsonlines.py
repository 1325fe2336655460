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

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import pyarrow as pa

from ..errors import AuditError, first_line

BLOCK_BYTES = 1024 * 1024  # bytes parsed at a time: memory stays flat however large the file (see below)
MAX_LINE_BYTES = 64 * 1024 * 1024  # one row: a file with no line end must not be read into memory whole
STEP = 1024 * 1024  # bytes read at a time while looking for a line end


MAX_BAD_LINES = 100  # lines that are not JSON rows before the reader stops: past that it is not JSON Lines


@dataclass(frozen=True)
class BadLines:
    """Lines of the file that are not JSON rows, skipped by the reader: (1-based line, the parser's message)
    in file order; ``stopped``: the line after which reading stopped (MAX_BAD_LINES reached), else None.

    ``datasets``' JSON builder refuses the whole file at the first one, so a trainer never starts; the scan
    reports each at its line and reads on, so one damaged line does not hide the rest of the file."""

    lines: tuple[tuple[int, str], ...]
    stopped: int | None = None


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


def _parse(block: bytes) -> pa.Table:
    import pyarrow.json as paj

    options = paj.ReadOptions(block_size=len(block) + 1, use_threads=False)
    return paj.read_json(pa.BufferReader(block), read_options=options)


def _fails(text: bytes) -> str | None:
    """pyarrow's message when ``text`` does not parse, else None (without its "in row 0": the line is named)."""
    try:
        _parse(text)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        message = first_line(exc, 200)
        return message.removesuffix(" in row 0").rstrip(". ") or message
    return None


def _not_a_row(text: bytes) -> str | None:
    """Why one line is not a JSON row (an object), else None. Decided by the JSON grammar, not by pyarrow:
    pyarrow also refuses valid rows whose types vary inside the row (a list ``content`` beside a string one,
    as vision and OpenAI-style chat rows have), which ``datasets`` reads (as ``Json``): such a block is not
    plain (NotPlain), never a bad line."""
    try:
        value = json.loads(text)
    except RecursionError:
        return "nested too deeply"
    except ValueError as exc:  # JSONDecodeError, and UnicodeDecodeError for bytes that are not UTF-8
        return first_line(exc, 200)
    return None if isinstance(value, dict) else f"a JSON {type(value).__name__}, not an object"


def _find_bad(lines: list[bytes], lo: int, hi: int, room: int, out: list[tuple[int, str]]) -> None:
    """Append (index, message) of the lines in [lo, hi) that fail alone, halving the range (which failed as a
    whole): about two parses of the range per bad line, not one parse per line. A range whose halves both
    parse (a type that changes between rows, not a bad line) holds none."""
    if hi - lo == 1:
        message = _not_a_row(lines[lo]) if lines[lo].strip() else None  # a blank line is no row, and no error
        if message is not None:
            out.append((lo, message))
        return
    mid = (lo + hi) // 2
    for a, b in ((lo, mid), (mid, hi)):
        if len(out) < room and _fails(b"\n".join(lines[a:b])) is not None:
            _find_bad(lines, a, b, room, out)


def _without_bad_lines(block: bytes, line: int, room: int) -> tuple[bytes, list[tuple[int, str]], int | None]:
    """The block's lines that parse as JSON rows, the others as (line, pyarrow's message), and the line the
    reading stops at when the ``room``-th bad line is met (None: the whole block was read); ``line``: the
    block's first line. Only a block that failed as a whole comes here; the kept lines are then parsed
    together, as any block (one type inference over them)."""
    lines = block.split(b"\n")
    found: list[tuple[int, str]] = []
    _find_bad(lines, 0, len(lines), room, found)
    found = found[:room]
    stop = found[-1][0] if len(found) >= room else None
    bad_at = {k for k, _ in found}
    kept = [text for k, text in enumerate(lines[:None if stop is None else stop]) if k not in bad_at and text.strip()]
    return b"\n".join(kept), [(line + k, m) for k, m in found], None if stop is None else line + stop


def jsonl_batches(path: Path, batch_size: int, block_bytes: int | None = None, *, start: int = 0,
                  stop: int | None = None, schema: pa.Schema | None = None) -> Iterator[pa.Table]:
    """Tables of the file's rows; NotPlain at the first line that is not a JSON row (see :func:`_read`)."""
    for item in _read(path, batch_size, block_bytes, start, stop, schema, skip_bad_lines=False):
        if isinstance(item, pa.Table):
            yield item


def jsonl_rows_and_bad_lines(path: Path, batch_size: int, block_bytes: int | None = None) -> Iterator[pa.Table | BadLines]:
    """The whole file's rows, with the lines that are not JSON rows skipped and reported (see :func:`_read`)."""
    yield from _read(path, batch_size, block_bytes, 0, None, None, skip_bad_lines=True)


def jsonl_range_rows_and_bad_lines(path: Path, batch_size: int, *, start: int, stop: int | None,
                                   schema: pa.Schema | None = None) -> Iterator[pa.Table | BadLines]:
    """The rows of the lines starting in bytes [start, stop) (a Ray task's unit), with the lines that are
    not JSON rows skipped and reported as :class:`BadLines` whose line numbers count from the range's first
    line (1); the caller adds the lines before it (:func:`first_line_at`). NotPlain as :func:`jsonl_batches`."""
    yield from _read(path, batch_size, None, start, stop, schema, skip_bad_lines=True)


def first_line_at(path: Path, start: int) -> int:
    """The 1-based number of the first line that starts at or after byte ``start`` (as :func:`line_blocks`
    cuts ranges: a line belongs to the range holding its first byte): 1 + the lines before it, which are the
    line ends before ``start``, plus the line byte ``start - 1`` is in when that byte ends no line."""
    ends, last = 0, b"\n"
    with open(path, "rb") as fh:
        left = start
        while left > 0:
            chunk = fh.read(min(STEP, left))
            if not chunk:
                break
            ends += chunk.count(b"\n")
            last = chunk[-1:]
            left -= len(chunk)
    return 1 + ends + (0 if last == b"\n" else 1)


def _read(path: Path, batch_size: int, block_bytes: int | None, start: int, stop: int | None,
          schema: pa.Schema | None, *, skip_bad_lines: bool) -> Iterator[pa.Table | BadLines]:
    """Tables of at most ``batch_size`` rows of the JSON Lines file ``path`` (of the lines starting in
    bytes [start, stop): see :func:`line_blocks`); NotPlain when they are not a plain table (see the
    module's docstring) or, with ``schema``, not a table of that schema.

    ``skip_bad_lines``: a line that is not a JSON row is skipped and reported as :class:`BadLines` after
    the rows before it (in a whole file never first: the first item is a table, whose schema plans the
    split), up to MAX_BAD_LINES; a whole file with no JSON row at all is an AuditError naming its first
    line. In a byte range (a Ray unit) line numbers count from the range's first line, and bad lines are
    reported even where the range holds no row. Without it the first bad line raises NotPlain, as before
    (the caller falls back to ``datasets``).

    Each block is parsed on its own and released before the next, as the builder does (pyarrow's
    streaming reader, tried first, kept memory that grew with the file: +60 MB at 50 MB)."""
    rows = 0
    line = 1  # the block's first line (1-based; in a range, counted from the range's first line)
    ranged = start > 0 or stop is not None
    first: pa.Schema | None = None
    pending: list[tuple[int, str]] = []  # bad lines not yet reported (until a table has been yielded)
    reported = 0
    stopped: int | None = None  # the line reading stopped at (MAX_BAD_LINES met)
    for block in line_blocks(path, block_bytes or BLOCK_BYTES, start, stop):
        block_lines = block.count(b"\n") + (0 if block.endswith(b"\n") else 1)
        try:
            table = _parse(block)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            if not skip_bad_lines:
                raise NotPlain(rows, str(exc)) from None
            kept, skipped, stopped = _without_bad_lines(block, line, MAX_BAD_LINES - len(pending) - reported)
            pending += skipped
            try:
                table = _parse(kept) if kept else pa.table({})
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as again:  # rows that parse alone, not together
                raise NotPlain(rows, str(again)) from None
        line += block_lines
        if not table.num_rows and (stop is not None or not table.num_columns):
            if stopped is not None:
                break
            continue  # blank or bad lines only: nothing to add (a byte range may hold just those)
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
        if pending and (first is not None or ranged):
            yield BadLines(tuple(pending), stopped)
            reported += len(pending)
            pending = []
        if stopped is not None:
            return
    if pending and (first is not None or ranged):
        yield BadLines(tuple(pending), stopped)
    elif pending:
        where = (f"{len(pending)} of its first {stopped} lines are not" if stopped is not None
                 else "no line of the file is one")
        raise AuditError(path, f"line {pending[0][0]}: not a JSON row ({pending[0][1]}); {where}: not JSON Lines")
    if first is None and stop is None:
        raise NotPlain(0, "no rows")


def bad_lines_of(path: Path, block_bytes: int | None = None) -> BadLines | None:
    """The lines of the whole file that are not JSON rows (up to MAX_BAD_LINES; ``stopped`` as the reader
    sets it), or None. For the ``datasets`` fallback, whose JSON builder refuses a file at its first bad
    line: a block pyarrow parses holds none; in a block it refuses (a bad line, or types that vary between
    rows) each line is checked against the JSON grammar alone (``json.loads``), one pass, no halving."""
    found: list[tuple[int, str]] = []
    line = 1
    for block in line_blocks(path, block_bytes or BLOCK_BYTES):
        if _fails(block) is not None:
            for k, text in enumerate(block.split(b"\n")):
                message = _not_a_row(text) if text.strip() else None
                if message is None:
                    continue
                found.append((line + k, message))
                if len(found) >= MAX_BAD_LINES:
                    return BadLines(tuple(found), line + k)
        line += block.count(b"\n") + (0 if block.endswith(b"\n") else 1)
    return BadLines(tuple(found)) if found else None


def copy_without_lines(path: Path, bad: BadLines, target: Path) -> None:
    """Write ``path`` to ``target`` without the ``bad`` lines (and, where the reader stopped, without the
    lines from there on): what ``datasets`` reads so that one damaged line does not refuse the file."""
    skip = {k for k, _ in bad.lines}
    line = 1
    with open(target, "wb") as out:
        for block in line_blocks(path, BLOCK_BYTES):
            lines = block.split(b"\n")
            if block.endswith(b"\n"):
                lines.pop()  # the empty piece after the block's last line end
            for k, text in enumerate(lines):
                if bad.stopped is not None and line + k >= bad.stopped:
                    return
                if line + k not in skip:
                    out.write(text + b"\n")
            line += len(lines)


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
