"""How much a tokenizer's normalizer can grow a text, decided from its JSON before the library runs it.

The ``tokenizers`` library normalizes every text before splitting it, and the added tokens marked
``normalized`` while it loads the file. A normalizer chain chosen by the file can multiply a text's length:
30 ``Replace("a", "aa")`` in a ``Sequence`` make one "a" into 2^30 characters, and the library aborts the
whole process ("memory allocation of N bytes failed", nothing on standard error) on the first text that
holds an "a", the chat template's markers or the converter's test text included. Measured: a normalized
text costs the library about 36 bytes a character (16 M characters: 600 MB).

So the worst-case growth of the chain is computed as ``out <= factor * in + added`` (characters) from each
normalizer's own bound, compounded through ``Sequence``, and a tokenizer whose factor is over
:data:`MAX_GROWTH` (or whose added characters are over :data:`MAX_ADDED_CHARS`) is refused with one line
naming the file and the normalizers that grow text. The Unicode forms count at their Unicode bounds (UAX #15:
NFC 3x, NFD 4x, NFKC/NFKD 18x code points), so the real chains pass: T5's charsmap (18) and its
``Replace(" {2,}", " ")`` (counted 2) give 36, BERT's normalizer 24, NFKC + Lowercase 36.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import AuditError
from ...io.jsonfile import values_of_key

MAX_GROWTH = 64.0  # characters out per character in: a 1,000,000-character row stays under ~64 M characters
MAX_ADDED_CHARS = 1 << 20  # characters a chain adds whatever the text (Prepend, Append)
MAX_DEPTH = 64  # nested Sequences

# Code points out per code point in, at most (UAX #15 for the forms; Unicode's full case mappings).
UNICODE_FACTORS = {"NFC": 3.0, "NFD": 4.0, "NFKC": 18.0, "NFKD": 18.0, "Lowercase": 2.0, "ByteLevel": 4.0}
SHRINKING = frozenset({"Strip", "StripAccents", "Nmt"})  # never longer than their input


@dataclass(frozen=True)
class Growth:
    """``out <= factor * in + added`` characters; ``growers``: the normalizers that make it more than 1x."""

    factor: float = 1.0
    added: float = 0.0
    growers: tuple[str, ...] = ()

    def then(self, after: Growth) -> Growth:
        """This normalizer followed by ``after``."""
        return Growth(after.factor * self.factor, after.factor * self.added + after.added, self.growers + after.growers)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _charsmap_longest(value: Any) -> int:
    """The longest replacement (in characters) a ``precompiled_charsmap`` holds: its normalized strings
    follow the trie, NUL-separated (sentencepiece's ``normalizer.cc``)."""
    try:
        blob = base64.b64decode(value, validate=True) if isinstance(value, str) else bytes(value or b"")
    except (ValueError, binascii.Error, TypeError):
        return 1  # refused with its own message by check_precompiled_charsmaps / the library
    if len(blob) < 4:
        return 1
    trie = int.from_bytes(blob[:4], "little")
    return max((len(s.decode("utf-8", "replace")) for s in blob[4 + trie :].split(b"\0")), default=1)


def growth_of(spec: Any, depth: int = 0) -> Growth:
    """The worst-case growth of one normalizer spec (a JSON object), ``Sequence`` compounded."""
    if not isinstance(spec, dict):
        return Growth()
    kind = spec.get("type")
    if kind == "Sequence":
        if depth >= MAX_DEPTH:
            return Growth(float("inf"), 0.0, (f"Sequence nested over {MAX_DEPTH} deep",))
        out = Growth()
        items = spec.get("normalizers")
        for item in items if isinstance(items, list) else ():
            out = out.then(growth_of(item, depth + 1))
        return out
    if kind == "Replace":
        content = len(_text(spec.get("content")))
        pattern = spec.get("pattern")
        literal = pattern.get("String") if isinstance(pattern, dict) else None
        if isinstance(literal, str) and literal:
            factor = max(1.0, content / len(literal))
            return Growth(factor, 0.0, (f"Replace({literal[:20]!r}, {content}-character content)",) if factor > 1 else ())
        # a regex (or an empty string) may match one character, or none between two: content at every place
        return Growth(1.0 + content, float(content), ("Replace(regex)",) if content else ())
    if kind in ("Prepend", "Append"):
        added = len(_text(spec.get(kind.lower())))
        return Growth(1.0, float(added), (kind,) if added else ())
    if kind == "Precompiled":
        longest = _charsmap_longest(spec.get("precompiled_charsmap"))
        return Growth(float(max(1, longest)), 0.0, ("Precompiled",) if longest > 1 else ())
    if kind == "BertNormalizer":
        factor = 3.0 if spec.get("handle_chinese_chars", True) else 1.0  # " c " around each CJK character
        if spec.get("strip_accents") or (spec.get("strip_accents") is None and spec.get("lowercase", True)):
            factor *= UNICODE_FACTORS["NFD"]
        if spec.get("lowercase", True):
            factor *= UNICODE_FACTORS["Lowercase"]
        return Growth(factor, 0.0, ("BertNormalizer",) if factor > 1 else ())
    if isinstance(kind, str) and kind in UNICODE_FACTORS:
        return Growth(UNICODE_FACTORS[kind], 0.0, (kind,))
    return Growth()  # Strip, StripAccents, Nmt shrink; an unknown type is refused by the library


def check_growth(spec: Any, path: Path, where: str = "normalizer") -> Growth:
    """Refuse a normalizer whose worst-case growth is over the bounds (one line naming the file)."""
    growth = growth_of(spec)
    if growth.factor > MAX_GROWTH or growth.added > MAX_ADDED_CHARS:
        names = list(dict.fromkeys(growth.growers))
        shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
        if growth.factor > MAX_GROWTH:
            size = f"{growth.factor:,.0f}-fold" if growth.factor < 1e30 else "over 10^30-fold"
        else:
            size = f"by {growth.added:,.0f} characters" if growth.added < 1e30 else "by over 10^30 characters"
        raise AuditError(path, f"{where} can grow a text {size} ({shown}), over the bound of {MAX_GROWTH:.0f}-fold "
                         f"and {MAX_ADDED_CHARS:,} characters: the tokenizers library would abort on it"[:400])
    return growth


def check_normalizer_growth(raw: bytes, path: Path) -> None:
    """Every ``"normalizer": {...}`` object in a ``tokenizer.json``'s bytes, checked before the library
    loads it (loading normalizes the added tokens). Found by a byte search, as the charsmaps are: the key
    cannot occur inside a JSON string (its quotes would be escaped); a vocabulary entry named "normalizer"
    has a number for its value and is skipped."""
    for begin in values_of_key(raw, "normalizer"):
        if raw[begin : begin + 1] != b"{":
            continue  # null, a number (a token named "normalizer"), or junk the library refuses itself
        spec = _object_at(raw, begin)
        if spec is None:
            return  # not JSON: the library refuses the file with its own message
        check_growth(spec, path)


def _object_at(raw: bytes, begin: int) -> Any:
    """The JSON object starting at byte ``begin``, decoded through a window that doubles until it holds the
    whole object: a normalizer is ~100 bytes (a charsmap ~300 KB), the vocabulary after it is megabytes."""
    decoder = json.JSONDecoder()
    window = 1 << 16
    while True:
        chunk = raw[begin : begin + window]
        try:
            return decoder.raw_decode(chunk.decode("utf-8", "replace"))[0]
        except RecursionError:
            return None
        except ValueError:
            if begin + window >= len(raw):
                return None
            window *= 4


def check_backend_growth(backend: Any, path: Path) -> None:
    """The same bound on a loaded backend's normalizer (a tokenizer converted from slow files, or given
    in memory), read back as JSON through the library's own serialisation."""
    normalizer = getattr(backend, "normalizer", None)
    state = getattr(normalizer, "__getstate__", None)
    if state is None:
        return
    try:
        spec = json.loads(state())
    except (TypeError, ValueError, RecursionError):
        return
    check_growth(spec, path)
