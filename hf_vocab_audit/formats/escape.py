"""Escaping untrusted strings (token strings, tensor names, allowlist reasons, paths) for each medium.

A report repeats what the checkpoint says. Unescaped, a tensor name with control characters breaks the
JUnit XML and drives the terminal; a token string with a newline and ``::error`` or
``::stop-commands::`` becomes a GitHub Actions workflow command; a NaN statistic makes JSON that strict
parsers refuse. Each renderer passes what it prints through the function for its medium.
"""

from __future__ import annotations

import math
import unicodedata
from typing import Any

# Bidirectional overrides and isolates: they reorder how the rest of a line is displayed ("Trojan source").
BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _escaped(ch: str) -> str:
    return repr(ch)[1:-1] if ch != "\\" else ch


def printable(text: str) -> str:
    """``text`` on one line with every control, separator, surrogate and bidi character escaped
    (``\\x1b``, ``\\n``, ``\\u202e``): for a terminal, a log line, a Markdown cell."""
    return "".join(
        _escaped(ch) if ch in BIDI or unicodedata.category(ch) in ("Cc", "Cs", "Zl", "Zp") else ch for ch in text
    )


def _xml_legal(ch: str) -> bool:
    o = ord(ch)
    return (o in (0x9, 0xA, 0xD) or 0x20 <= o <= 0xD7FF or 0xE000 <= o <= 0xFFFD or 0x10000 <= o <= 0x10FFFF) and not (
        0x7F <= o <= 0x9F or ch in BIDI
    )


def xml_text(text: str) -> str:
    """``text`` with every character XML 1.0 forbids (most C0 controls, surrogates, U+FFFE/FFFF), the C1
    controls and bidi overrides escaped; tabs and newlines kept (multi-line failure bodies)."""
    return text if all(_xml_legal(ch) for ch in text) else "".join(ch if _xml_legal(ch) else _escaped(ch) for ch in text)


def finite(value: Any) -> Any:
    """``value`` with every NaN or infinite float replaced by None (``null``): JSON has no NaN."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value
