"""Escaping untrusted strings (token strings, tensor names, allowlist reasons, paths) for each medium.

A report repeats what the checkpoint says. Unescaped, a tensor name with control characters breaks the
JUnit XML and drives the terminal; a token string with a newline and ``::error`` or
``::stop-commands::`` becomes a GitHub Actions workflow command; a NaN statistic makes JSON that strict
parsers refuse. Each renderer passes what it prints through the function for its medium.
"""

from __future__ import annotations

import math
from typing import Any

from ..errors import hidden, printable

__all__ = ["finite", "hidden", "printable", "shown", "xml_text"]


def _xml_legal(ch: str) -> bool:
    o = ord(ch)
    return (o in (0x9, 0xA) or 0x20 <= o <= 0xD7FF or 0xE000 <= o <= 0xFFFD or 0x10000 <= o <= 0x10FFFF) and (
        o < 0x7F or not hidden(ch)
    )


def xml_text(text: str) -> str:
    """``text`` with every character XML 1.0 forbids (most C0 controls, surrogates, U+FFFE/FFFF) and every
    other hidden one (CR, C1 controls, bidi overrides, zero-width and other format characters, U+2028/2029)
    escaped as :func:`printable` writes them; tabs and newlines kept (multi-line failure bodies)."""
    return text if all(_xml_legal(ch) for ch in text) else "".join(ch if _xml_legal(ch) else repr(ch)[1:-1] for ch in text)


def shown(text: str) -> str:
    """Text a viewer displays (a SARIF message, a suppression's justification): hidden characters escaped
    as :func:`printable` writes them, newlines and tabs kept (SARIF messages are multi-line)."""
    return printable(text, keep="\n\t")


def finite(value: Any) -> Any:
    """``value`` with every NaN or infinite float replaced by None (``null``): JSON has no NaN."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value
