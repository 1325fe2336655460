"""Read a GGUF file's metadata and tensor infos without touching the tensor data, bounded like a safetensors
header: a GGUF from a download or a pull request is untrusted input.

``gguf.GGUFReader`` (llama.cpp's Python reader) memory-maps the file and follows the counts it declares: a
file that claims 2**60 key/value pairs or a string of 2**62 bytes makes it loop or allocate by that count.
Here every count is checked against the bytes left in the file (and a fixed ceiling) BEFORE anything is
read or allocated by it, nested arrays are refused as llama.cpp's ``gguf.cpp`` refuses them, tensor offsets
must lie inside the data section, and big string arrays the audit does not need (merges) are walked, never
decoded. The file is memory-mapped read-only: pages are touched only where the metadata is.

Layout (GGUF v2/v3, little-endian): ``GGUF`` magic, uint32 version, uint64 tensor count, uint64 key/value
count, the key/value pairs, the tensor infos (name, uint32 n_dims, uint64 dims in ggml order, uint32 ggml
type, uint64 offset), then the data section aligned to ``general.alignment`` (32 by default).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from ..errors import AuditError
from .safetensors_header import TensorInfo

MAGIC = b"GGUF"
MAX_STRING_BYTES = 16 * 1024 * 1024  # one key, token or chat template; llama.cpp's own tokens are short
MAX_ARRAY_ITEMS = 8 * 1024 * 1024  # the largest real vocabularies and merge lists are ~10**6
MAX_KEPT_BYTES = 128 * 1024 * 1024  # all string values kept (tokens, chat templates, an embedded tokenizer.json)
CHUNK = 4 << 20
MAX_COUNT = 1 << 20  # key/value pairs and tensors in one file
MAX_DIMS = 4  # GGML_MAX_DIMS
# Work over ALL the files of one GGUF (a split model is read part by part): a count per file alone lets
# 1,000 parts of 100,000 keys each cost half an hour. Real models hold ~100 keys and a few thousand tensor
# infos in all, and one vocabulary plus its merges (~10**6 strings).
MAX_TOTAL_ENTRIES = 1 << 18  # key/value pairs and tensor infos, every part together
MAX_TOTAL_ITEMS = 1 << 23  # array items walked or kept, every part together

# GGUF value types: (name, struct format) for scalars.
SCALARS = {
    0: ("uint8", "<B"), 1: ("int8", "<b"), 2: ("uint16", "<H"), 3: ("int16", "<h"), 4: ("uint32", "<I"),
    5: ("int32", "<i"), 6: ("float32", "<f"), 7: ("bool", "<?"), 10: ("uint64", "<Q"), 11: ("int64", "<q"),
    12: ("float64", "<d"),
}  # fmt: skip
STRING, ARRAY = 8, 9

# ggml tensor types: name, elements per block, bytes per block (ggml.c's type_traits; checked against the
# gguf package's GGML_QUANT_SIZES by tests/io/test_gguf_header.py).
GGML_TYPES: dict[int, tuple[str, int, int]] = {
    0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20), 6: ("Q5_0", 32, 22),
    7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34), 9: ("Q8_1", 32, 40), 10: ("Q2_K", 256, 84), 11: ("Q3_K", 256, 110),
    12: ("Q4_K", 256, 144), 13: ("Q5_K", 256, 176), 14: ("Q6_K", 256, 210), 15: ("Q8_K", 256, 292),
    16: ("IQ2_XXS", 256, 66), 17: ("IQ2_XS", 256, 74), 18: ("IQ3_XXS", 256, 98), 19: ("IQ1_S", 256, 50),
    20: ("IQ4_NL", 32, 18), 21: ("IQ3_S", 256, 110), 22: ("IQ2_S", 256, 82), 23: ("IQ4_XS", 256, 136),
    24: ("I8", 1, 1), 25: ("I16", 1, 2), 26: ("I32", 1, 4), 27: ("I64", 1, 8), 28: ("F64", 1, 8),
    29: ("IQ1_M", 256, 56), 30: ("BF16", 1, 2), 34: ("TQ1_0", 256, 54), 35: ("TQ2_0", 256, 66),
    39: ("MXFP4", 32, 17), 40: ("NVFP4", 64, 36), 41: ("Q1_0", 128, 18),
}  # fmt: skip


class ReadBudget:
    """The work one GGUF (every part of a split one) may ask of the reader, charged by declared count
    BEFORE the entries or items are read: past it, one line naming the file that went over."""

    def __init__(self, entries: int = MAX_TOTAL_ENTRIES, items: int = MAX_TOTAL_ITEMS, kept: int = MAX_KEPT_BYTES) -> None:
        self.entries_left, self.items_left = entries, items
        self.limits = (entries, items)
        self.kept, self.max_kept = 0, kept  # bytes of strings decoded and kept, every part together

    def entries(self, cur: _Cursor, n: int, what: str) -> None:
        self.entries_left -= n
        if self.entries_left < 0:
            raise cur.fail(f"{what}: the GGUF's files declare over {self.limits[0]:,} keys and tensors together "
                           "(a bound on the work a file may ask for; real models hold a few thousand)")

    def items(self, cur: _Cursor, n: int, what: str) -> None:
        self.items_left -= n
        if self.items_left < 0:
            raise cur.fail(f"{what}: the GGUF's files declare over {self.limits[1]:,} array items together "
                           "(a bound on the work a file may ask for)"[:300])


@dataclass(frozen=True)
class GGUFArray:
    """An array value: its item type and count; ``values`` only for the arrays the caller asked to keep."""

    item_type: int
    count: int
    values: tuple[object, ...] | None = None


@dataclass(frozen=True)
class GGUFHeader:
    path: Path
    version: int
    metadata: dict[str, object]  # key -> int | float | bool | str | GGUFArray
    tensors: tuple[TensorInfo, ...]  # shapes in row-major order (ggml's ne reversed): token_embd is (n_vocab, n_embd)
    data_start: int
    alignment: int
    key_order: tuple[str, ...] = field(default=())


class _Cursor:
    """Bounded reads from the file through a window of at most a few MiB: every read checks the bytes left
    first, so memory follows what is kept, never the file size or a declared length (no memory map either:
    mapping a 40 GB GGUF fails under an address-space limit)."""

    def __init__(self, path: Path, fh: BinaryIO, size: int, budget: ReadBudget | None = None) -> None:
        self.path, self.fh, self.size = path, fh, size
        self.budget = ReadBudget() if budget is None else budget
        self.pos, self.buf, self.buf_start = 0, b"", 0

    def fail(self, problem: str) -> AuditError:
        return AuditError(self.path, f"malformed GGUF at byte {self.pos}: {problem}")

    def need(self, n: int, what: str) -> None:
        if n > self.size - self.pos:
            raise self.fail(f"{what} needs {n} bytes but only {self.size - self.pos} remain (truncated or lying count)")

    def window(self, n: int) -> int:
        """Offset in ``self.buf`` of the ``n`` bytes at ``self.pos`` (``need`` was checked), reading them."""
        off = self.pos - self.buf_start
        if 0 <= off and off + n <= len(self.buf):
            return off
        self.fh.seek(self.pos)
        self.buf, self.buf_start = self.fh.read(max(n, CHUNK)), self.pos
        if len(self.buf) < n:
            raise self.fail("the file ended early (it shrank while being read?)")
        return 0

    def unpack(self, fmt: str, what: str) -> object:
        n = struct.calcsize(fmt)
        self.need(n, what)
        off = self.window(n)  # first: it may replace the buffer
        (value,) = struct.unpack_from(fmt, self.buf, off)
        self.pos += n
        return value

    def u32(self, what: str) -> int:
        return int(self.unpack("<I", what))  # type: ignore[call-overload]

    def u64(self, what: str) -> int:
        return int(self.unpack("<Q", what))  # type: ignore[call-overload]

    def string_length(self, what: str) -> int:
        n = self.u64(f"{what} length")
        if n > MAX_STRING_BYTES:
            raise self.fail(f"{what} declares {n} bytes, over the {MAX_STRING_BYTES}-byte limit")
        self.need(n, what)
        return n

    def string(self, what: str) -> str:
        n = self.string_length(what)
        self.budget.kept += n
        if self.budget.kept > self.budget.max_kept:
            raise self.fail(f"the metadata's strings exceed {self.budget.max_kept} bytes")
        off = self.window(n)
        raw = self.buf[off : off + n]
        self.pos += n
        return raw.decode("utf-8", errors="replace")

    def skip_string(self, what: str) -> None:
        n = self.string_length(what)
        self.pos += n

    def raw(self, n: int) -> tuple[bytes, int]:
        """The buffer holding the next ``n`` bytes and their offset in it (``need`` was checked)."""
        off = self.window(n)  # first: it may replace the buffer
        return self.buf, off


def _count(cur: _Cursor, what: str, min_bytes: int, ceiling: int) -> int:
    """A declared count, refused when the rest of the file cannot hold that many items of ``min_bytes``."""
    n = cur.u64(what)
    if n > ceiling:
        raise cur.fail(f"{what} is {n}, over the limit of {ceiling}")
    if min_bytes and n > (cur.size - cur.pos) // min_bytes:
        raise cur.fail(f"{what} is {n}, more than the {cur.size - cur.pos} bytes left can hold")
    return n


def _value(cur: _Cursor, vtype: int, key: str, keep: bool) -> object:
    if vtype in SCALARS:
        return cur.unpack(SCALARS[vtype][1], f"value of {key!r}"[:200])
    if vtype == STRING:
        return cur.string(f"string value of {key!r}"[:200])
    if vtype != ARRAY:
        raise cur.fail(f"key {key!r} has unknown value type {vtype}"[:300])
    item = cur.u32(f"array type of {key!r}"[:200])
    if item == ARRAY:
        raise cur.fail(f"key {key!r} is a nested array, which llama.cpp does not read"[:300])
    if item != STRING and item not in SCALARS:
        raise cur.fail(f"key {key!r} is an array of unknown type {item}"[:300])
    width = 8 if item == STRING else struct.calcsize(SCALARS[item][1])
    n = _count(cur, f"array length of {key!r}"[:200], width, MAX_ARRAY_ITEMS)
    if item == STRING or keep:  # a scalar array skipped is one seek, whatever its length
        cur.budget.items(cur, n, f"array {key!r}"[:200])
    if item != STRING:
        fmt = SCALARS[item][1]
        values = struct.unpack_from(f"<{n}{fmt[1]}", *cur.raw(n * width)) if keep else None
        cur.pos += n * width
        return GGUFArray(item, n, values)
    return GGUFArray(item, n, _strings(cur, n, keep, key))


_U64 = struct.Struct("<Q")


def _strings(cur: _Cursor, n: int, keep: bool, key: str) -> tuple[str, ...] | None:
    """``n`` strings of an array, decoded when ``keep`` (else only walked): one tight loop, since a vocabulary
    and its merges are 10**5-10**6 items (each length is checked as :meth:`_Cursor.string_length` does)."""
    out: list[str] | None = [] if keep else None
    buf, base, pos, size, u64 = cur.buf, cur.buf_start, cur.pos, cur.size, _U64.unpack_from
    end = base + len(buf)
    for _ in range(n):
        if pos < base or pos + 8 > end:
            cur.pos = pos
            cur.need(8, f"item length of {key!r}"[:200])
            cur.window(8)
            buf, base = cur.buf, cur.buf_start
            end = base + len(buf)
        off = pos - base
        (length,) = u64(buf, off)
        if length > MAX_STRING_BYTES or length > size - pos - 8:
            cur.pos = pos + 8
            cur.need(length, f"item of {key!r}"[:200])
            raise cur.fail(f"item of {key!r} declares {length} bytes, over the {MAX_STRING_BYTES}-byte limit"[:300])
        pos += 8
        if out is not None:
            off += 8
            if pos + length > end:
                cur.pos = pos
                off = cur.window(length)
                buf, base = cur.buf, cur.buf_start
                end = base + len(buf)
            out.append(buf[off : off + length].decode("utf-8", errors="replace"))
            cur.budget.kept += length
        pos += length
    cur.pos = pos
    if cur.budget.kept > cur.budget.max_kept:
        raise cur.fail(f"the metadata's strings exceed {cur.budget.max_kept} bytes")
    return tuple(out) if out is not None else None


def read_gguf(path: Path, rel: str, keep: frozenset[str] = frozenset(), budget: ReadBudget | None = None) -> GGUFHeader:
    """Parse and validate one GGUF file's metadata and tensor infos. ``keep``: the array keys whose values are
    returned (the others are counted and skipped). ``budget``: shared by the parts of a split GGUF (a fresh
    one per call by default)."""
    if not path.is_file():  # a FIFO or device would block or never end
        raise AuditError(path, "is not a regular file")
    try:
        with open(path, "rb") as fh:
            size = path.stat().st_size
            if size < 24:
                raise AuditError(path, f"truncated GGUF file: {size} bytes, less than the 24-byte header")
            return _parse(_Cursor(path, fh, size, budget), rel, keep)
    except OSError as exc:
        raise AuditError(path, f"cannot be read: {exc.strerror or exc}") from None
    except (ValueError, OverflowError, struct.error) as exc:  # e.g. a file that shrank underneath
        raise AuditError(path, f"malformed GGUF ({exc.__class__.__name__})") from None


def _parse(cur: _Cursor, rel: str, keep: frozenset[str]) -> GGUFHeader:
    path = cur.path
    off = cur.window(4)
    magic = cur.buf[off : off + 4]
    if magic != MAGIC:
        raise AuditError(path, f"is not a GGUF file (magic {magic!r}, expected b'GGUF')")
    cur.pos = 4
    version = cur.u32("version")
    if version not in (2, 3):
        swapped = struct.unpack("<I", struct.pack(">I", version))[0]
        why = " (a big-endian GGUF)" if swapped in (2, 3) else ""
        raise AuditError(path, f"GGUF version {version}{why} is not supported (2 and 3 are)")
    n_tensors = _count(cur, "tensor count", 24, MAX_COUNT)  # a tensor info is >= 24 bytes
    n_kv = _count(cur, "key/value count", 13, MAX_COUNT)  # a pair is >= 13 bytes
    cur.budget.entries(cur, n_tensors + n_kv, "key/value and tensor counts")
    metadata: dict[str, object] = {}
    for _ in range(n_kv):
        key = cur.string("key")
        if key in metadata:
            raise cur.fail(f"duplicate key {key!r}"[:300])
        vtype = cur.u32(f"value type of {key!r}"[:200])
        metadata[key] = _value(cur, vtype, key, key in keep)
    alignment = metadata.get("general.alignment", 32)
    if not isinstance(alignment, int) or isinstance(alignment, bool) or alignment <= 0 or alignment & (alignment - 1):
        raise AuditError(path, f"general.alignment must be a power of two, not {alignment!r}"[:300])
    raw: list[tuple[str, int, tuple[int, ...], int, int]] = []
    names: set[str] = set()
    for _ in range(n_tensors):
        name = cur.string("tensor name")
        if name in names:
            raise cur.fail(f"duplicate tensor {name!r}"[:300])
        names.add(name)
        n_dims = cur.u32(f"n_dims of tensor {name!r}"[:200])
        if n_dims > MAX_DIMS:
            raise cur.fail(f"tensor {name!r} has {n_dims} dimensions, over ggml's {MAX_DIMS}"[:300])
        dims = tuple(cur.u64(f"dims of tensor {name!r}"[:200]) for _ in range(n_dims))
        gtype = cur.u32(f"type of tensor {name!r}"[:200])
        if gtype not in GGML_TYPES:
            raise cur.fail(f"tensor {name!r} has unknown ggml type {gtype}"[:300])
        offset = cur.u64(f"offset of tensor {name!r}"[:200])
        raw.append((name, gtype, dims, offset, cur.pos))
    data_start = -(-cur.pos // alignment) * alignment
    data_len = cur.size - data_start
    tensors: list[TensorInfo] = []
    for name, gtype, dims, offset, _pos in raw:
        tname, block, block_bytes = GGML_TYPES[gtype]
        nbytes = _nbytes(dims, block, block_bytes, data_len)
        where = f"tensor {name!r}"[:200]
        if nbytes is None:
            raise AuditError(path, f"{where}: {tname} {list(dims)} needs more bytes than the file holds")
        if offset % alignment:
            raise AuditError(path, f"{where}: offset {offset} is not a multiple of the alignment {alignment}")
        if offset + nbytes > data_len:
            raise AuditError(path, f"{where}: data [{offset}, {offset + nbytes}) is past the end of the data "
                             f"section ({max(data_len, 0)} bytes; truncated file?)")
        begin = data_start + offset
        tensors.append(TensorInfo(name, tname, tuple(reversed(dims)), rel, begin, begin + nbytes))
    return GGUFHeader(path, version, metadata, tuple(tensors), data_start, alignment, tuple(metadata))


def _nbytes(dims: tuple[int, ...], block: int, block_bytes: int, limit: int) -> int | None:
    """Bytes of a tensor (rows of ``dims[0]`` elements in blocks), None once past ``limit`` or malformed."""
    if not dims:
        return block_bytes if block == 1 else None
    if dims[0] % block:
        return None
    total = dims[0] // block * block_bytes
    for d in dims[1:]:
        total *= d
        if total > max(limit, 0):
            return None
    return total if total <= max(limit, 0) or total == 0 else None
