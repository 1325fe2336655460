"""Bounds on a slow tokenizer's files before transformers sees them (the third round of hostile input).

A folder without ``tokenizer.json`` is loaded by ``AutoTokenizer``, which reads the vocabulary files whole
and, for SentencePiece models, converts them to a fast tokenizer. Measured before these checks: a
``spiece.model`` whose precompiled charsmap declared a 4 GiB trie aborted the process; one 500,000-character
piece made the conversion's merge generation (every split point of every piece) run 95 s; a 10-million-line
``vocab.txt`` took 6 GB and ended in a panic; a sparse 1 GiB ``vocab.txt`` aborted; a 2 GiB ``spiece.model``
was read whole; and ``tokenizer_class`` naming a model class made ``AutoTokenizer`` build that model, sized
by ``config.json``. So, before transformers is imported: each vocabulary file is at most
:data:`MAX_SLOW_BYTES`; the pieces are counted and measured (a SentencePiece model by walking its protobuf,
``vocab.txt`` and ``merges.txt`` by lines, ``vocab.json`` as JSON); a charsmap's trie must fit in its bytes;
and only tokenizer classes are accepted in ``tokenizer_class``.
"""

from __future__ import annotations

import re
from pathlib import Path

from ...errors import AuditError
from ...io.jsonfile import MAX_CONFIG_BYTES, read_bytes, read_json_object
from ...io.stand_in import refuse_stand_in
from .bounded_calls import check_charsmap_blob

# The largest real SentencePiece models are about 5 MB (mT5, XLM-R, Gemma); XLM-V's 901,629 pieces fit.
MAX_SLOW_BYTES = 64 * 1024 * 1024
MAX_PIECES = 1 << 20
MAX_PIECE_CHARS = 1024  # SentencePiece's own default is 16; long BPE whitespace tokens are a few hundred
MAX_SPLIT_WORK = 1 << 28  # sum over pieces of len(piece)^2: the work of transformers' merge generation

BINARY_SUFFIXES = (".model", ".spm")
VOCAB_NAMES = ("vocab.txt", "vocab.json", "merges.txt", "added_tokens.json", "bpe.codes", "entity_vocab.json")
_CLASS = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}")
_BASES = {"TokenizersBackend", "SentencePieceBackend", "PythonBackend", "PreTrainedTokenizerFast",
          "PreTrainedTokenizer"}


def check_slow_folder(folder: Path) -> None:
    """Refuse what would make ``AutoTokenizer`` unbounded or build something that is not a tokenizer."""
    for path in sorted(folder.iterdir()):
        name = path.name
        binary = name.endswith(BINARY_SUFFIXES)
        if not (binary or name in VOCAB_NAMES) or not path.is_file():
            continue
        refuse_stand_in(path, binary=binary)
        raw = read_bytes(path, MAX_SLOW_BYTES)
        if binary:
            _check_pieces(path, sentencepiece_pieces(raw, path))
        elif name in ("vocab.txt", "merges.txt", "bpe.codes"):
            _check_pieces(path, raw.splitlines())
        elif name in ("vocab.json", "entity_vocab.json", "added_tokens.json"):
            data = read_json_object(path, MAX_SLOW_BYTES)
            _check_pieces(path, [k.encode("utf-8", "surrogatepass") for k in data])
    for name in ("tokenizer_config.json", "config.json"):
        path = folder / name
        if path.is_file():
            check_tokenizer_class(path, read_json_object(path, MAX_CONFIG_BYTES).get("tokenizer_class"))


def check_tokenizer_class(path: Path, value: object) -> None:
    """``tokenizer_class`` must name a tokenizer: ``AutoTokenizer`` instantiates whatever transformers class
    it names (``LlamaForCausalLM`` builds the model its ``config.json`` describes)."""
    if value is None:
        return
    if not isinstance(value, str) or not _CLASS.fullmatch(value):
        raise AuditError(path, f"tokenizer_class must be a class name, not {str(value)[:80]!r}")
    if value in _BASES or value.endswith(("Tokenizer", "TokenizerFast")):
        return
    raise AuditError(path, f"tokenizer_class {value!r} is not a tokenizer class (a name ending in Tokenizer or "
                           "TokenizerFast); refused before transformers would build it")


def _check_pieces(path: Path, pieces: list[bytes]) -> None:
    if len(pieces) > MAX_PIECES:
        raise AuditError(path, f"holds {len(pieces)} vocabulary entries, over the {MAX_PIECES} limit")
    work = 0
    for i, piece in enumerate(pieces):
        n = len(piece)
        if n > MAX_PIECE_CHARS * 4 or (n > MAX_PIECE_CHARS and len(piece.decode("utf-8", "replace")) > MAX_PIECE_CHARS):
            raise AuditError(path, f"entry {i} is {n} bytes long, over the {MAX_PIECE_CHARS}-character limit")
        work += n * n
    if work > MAX_SPLIT_WORK:
        raise AuditError(path, f"its entries are too long in total to convert (sum of squared lengths {work}, "
                               f"limit {MAX_SPLIT_WORK})")


def _varint(raw: bytes, at: int, path: Path) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(raw) or shift > 63:
            raise AuditError(path, "is not a SentencePiece model (a truncated or overlong protobuf varint)")
        byte = raw[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7


def _fields(raw: bytes, path: Path) -> list[tuple[int, int, int, int]]:
    """(field number, wire type, start, end) of each field of one protobuf message; ``end`` exclusive."""
    out, at = [], 0
    while at < len(raw):
        key, at = _varint(raw, at, path)
        number, wire = key >> 3, key & 7
        if wire == 0:
            _, end = _varint(raw, at, path)
            start = at
        elif wire == 1:
            start, end = at, at + 8
        elif wire == 2:
            length, start = _varint(raw, at, path)
            end = start + length
        elif wire == 5:
            start, end = at, at + 4
        else:
            raise AuditError(path, f"is not a SentencePiece model (protobuf wire type {wire})")
        if end > len(raw):
            raise AuditError(path, "is not a SentencePiece model (a protobuf field runs past the end of the file)")
        out.append((number, wire, start, end))
        at = end
    return out


def sentencepiece_pieces(raw: bytes, path: Path) -> list[bytes]:
    """The pieces of a SentencePiece ``ModelProto``, each charsmap checked (normalizer and denormalizer)."""
    pieces: list[bytes] = []
    for number, wire, start, end in _fields(raw, path):
        if wire != 2:
            continue
        if number == 1:  # repeated SentencePiece { string piece = 1; float score = 2; Type type = 3; }
            if len(pieces) >= MAX_PIECES:
                raise AuditError(path, f"holds more than {MAX_PIECES} pieces")
            if start < end and raw[start] == 0x0A:  # the piece is the first field, as the library writes it
                length, at = _varint(raw, start + 1, path)
                if at + length <= end:
                    pieces.append(raw[at : at + length])
                    continue
            sub = raw[start:end]
            pieces.append(next((sub[s:e] for n, w, s, e in _fields(sub, path) if n == 1 and w == 2), b""))
        elif number in (3, 5):  # normalizer_spec, denormalizer_spec { ...; bytes precompiled_charsmap = 2; }
            sub = raw[start:end]
            for n, w, s, e in _fields(sub, path):
                if n == 2 and w == 2 and e > s:
                    check_charsmap_blob(sub[s:e], path)
    return pieces

