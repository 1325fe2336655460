"""Reading small JSON files from an untrusted checkpoint: bounded, typed, one-line errors."""

from __future__ import annotations

import bisect
import contextlib
import json
import os
import re
import stat
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import AuditError

# A real config.json is a few KB; tokenizer.json can reach ~30 MB (Gemma's 262k vocabulary).
MAX_CONFIG_BYTES = 16 * 1024 * 1024
MAX_TOKENIZER_BYTES = 256 * 1024 * 1024


def check_inside(path: Path, root: Path, what: str = "model folder") -> None:
    """Refuse a path (usually a symlink) that resolves outside ``root`` (the ``what``).

    A plain file or folder named directly in ``root`` is inside without resolving anything (one ``lstat``
    instead of one per path component: a sharded checkpoint asks this for every shard)."""
    if path.parent == root and path.name not in ("", ".", ".."):
        try:
            if not stat.S_ISLNK(os.lstat(path).st_mode):
                return
        except OSError:
            pass  # resolving below reports it
    try:
        resolved = path.resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        raise AuditError(path, f"cannot resolve path ({exc.__class__.__name__})") from None
    root_resolved = root.resolve()
    if resolved != root_resolved and root_resolved not in resolved.parents:
        if _in_hub_cache_blobs(root_resolved, resolved):
            return
        raise AuditError(path, f"points outside the {what} (to {resolved})")


def _in_hub_cache_blobs(root: Path, resolved: Path) -> bool:
    """The Hugging Face cache layout: ``models--X/snapshots/REV/f`` links to ``models--X/blobs/HASH``."""
    if root.parent.name != "snapshots" or not root.parent.parent.name.startswith(("models--", "datasets--")):
        return False
    return resolved.parent == root.parent.parent / "blobs"


@contextlib.contextmanager
def short_integers() -> Iterator[None]:
    """Parse JSON with integers limited to 640 digits (Python's minimum; default 4300).

    Converting a long digit string is quadratic: 20,000 integers of 4,000 digits take seconds, while no
    real config or header holds an integer over 20 digits.
    """
    with _DIGITS_LOCK:  # process-wide setting: the first entrant lowers it, the last one restores it
        if not _DIGITS_USERS:
            _DIGITS_USERS.append(sys.get_int_max_str_digits())
            sys.set_int_max_str_digits(640)
        _DIGITS_USERS.append(0)
    try:
        yield
    finally:
        with _DIGITS_LOCK:
            _DIGITS_USERS.pop()
            if len(_DIGITS_USERS) == 1:
                sys.set_int_max_str_digits(_DIGITS_USERS.pop())


_DIGITS_LOCK = threading.Lock()
_DIGITS_USERS: list[int] = []  # [saved limit, one entry per active user]


def loads(text: str | bytes) -> Any:
    """``json.loads`` with :func:`short_integers`."""
    with short_integers():
        return json.loads(text)


def read_bytes(path: Path, max_bytes: int) -> bytes:
    if not path.is_file():
        raise AuditError(path, "is not a regular file")
    size = path.stat().st_size
    if size > max_bytes:
        raise AuditError(path, f"is {size} bytes, over the {max_bytes}-byte limit for this kind of file")
    try:
        with open(path, "rb") as fh:
            return fh.read(max_bytes + 1)
    except OSError as exc:
        raise AuditError(path, f"cannot be read: {os.strerror(exc.errno) if exc.errno else exc}") from None


def read_json_object(path: Path, max_bytes: int = MAX_CONFIG_BYTES) -> dict[str, Any]:
    """Parse a JSON file that must hold an object."""
    raw = read_bytes(path, max_bytes)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise AuditError(path, f"is not valid UTF-8 (byte {exc.start})") from None
    try:
        data = loads(text)
    except json.JSONDecodeError as exc:
        from .stand_in import LFS_PREFIX, describe

        if raw.startswith(LFS_PREFIX):  # an index or config stored in Git LFS, checked out without it
            raise AuditError(path, str(describe(raw[:1024], len(raw), binary=False))) from None
        raise AuditError(path, f"is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise AuditError(path, "is not valid JSON: nested too deeply") from None
    except ValueError as exc:  # an integer literal over Python's 4300-digit limit
        raise AuditError(path, f"is not valid JSON: {str(exc).split(';')[0]}") from None
    if not isinstance(data, dict):
        raise AuditError(path, f"must hold a JSON object, not {type(data).__name__}")
    return data


def decimal_int(text: str) -> int | None:
    """``text`` as an int when it is plain ASCII decimal (``"-3"``), else None (``"²".isdigit()`` is True)."""
    return int(text) if re.fullmatch(r"-?[0-9]+", text) else None


class JsonLines:
    """1-based lines of ``"key":`` in one JSON file (for SARIF/GitHub annotations), the file read once
    however many findings ask: 200 findings against a 6 MB template took a second reading it per finding."""

    def __init__(self, path: Path) -> None:
        try:  # bounded as the audit's own JSON reads are: a file too large to audit has no lines to give
            self.text: str | None = read_bytes(path, MAX_TOKENIZER_BYTES).decode("utf-8", errors="replace")
        except AuditError:
            self.text = None
        self._starts: list[int] | None = None

    def line_of_key(self, key: str) -> int | None:
        """The line of the first ``"key"`` in the file, None when absent (or the file is unreadable)."""
        if self.text is None:
            return None
        at = self.text.find(f'"{key}"')
        if at < 0:
            return None
        if self._starts is None:
            self._starts = [m.start() for m in re.finditer("\n", self.text)]
        return bisect.bisect_left(self._starts, at) + 1


def values_of_key(raw: bytes, key: str) -> Iterator[int]:
    """The byte offset of the value after every ``"key":`` in a JSON document's bytes, found without parsing it.

    The key cannot occur inside a JSON string (its quotes would be escaped there), so each hit is a real key;
    the caller checks the value's first byte (a key of that name elsewhere may hold another type)."""
    needle = json.dumps(key).encode()
    start = 0
    while (at := raw.find(needle, start)) != -1:
        start = at + len(needle)
        colon = raw.find(b":", start)
        if colon == -1 or raw[start:colon].strip():
            continue
        begin = colon + 1
        while begin < len(raw) and raw[begin] in b" \t\r\n":
            begin += 1
        yield begin
