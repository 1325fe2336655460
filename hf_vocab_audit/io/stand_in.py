"""Files that stand in for the real one: a Git LFS pointer, an empty file, an HTML page, text in a binary's place.

A CI checkout without ``lfs: true`` leaves ~130-byte pointer files where the weights and the SentencePiece
model should be; a failed download can leave an empty file or the server's HTML error page under the
weights' name. Read as safetensors, a pointer's first 8 bytes give a "header length" of
2336927755350992246, and the user is told nothing about the fix. These are recognised by their first bytes,
before any parser (ours, torch's, the tokenizer library's) sees the file, and refused with one line that
names the fix.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import AuditError

LFS_PREFIX = b"version https://git-lfs.github.com/spec/"
LFS_FIX = "fetch the real file with `git lfs pull` (in GitHub Actions: actions/checkout with `lfs: true`)"
HEAD_BYTES = 1024  # enough for a pointer (about 130 bytes) and an HTML page's opening
_TEXT_BYTES = frozenset(range(0x20, 0x7F)) | {0x09, 0x0A, 0x0D}


def describe(head: bytes, size: int, *, binary: bool) -> str | None:
    """What ``head`` (the first bytes of a ``size``-byte file) stands in for, or None for a plausible file.

    ``binary``: the real file is never text (safetensors, a pickle or zip ``.bin``, a SentencePiece
    protobuf), so text in its place is refused too. A safetensors file cannot start with 8 text bytes: its
    header length would be at least 2^56.
    """
    if size == 0:
        return (f"is empty (0 bytes), a stand-in for the real file (an interrupted download or a checkout "
                f"without its LFS files): download it again, or {LFS_FIX}")
    if head.startswith(LFS_PREFIX):
        oid = _pointer_field(head, b"oid ")
        real = _pointer_field(head, b"size ")
        of = f" for a {real}-byte file" if real and real.isdigit() else ""
        return f"is a Git LFS pointer ({size} bytes{of}{', ' + oid[:20] if oid else ''}), not the file: {LFS_FIX}"
    start = head.lstrip(b"\xef\xbb\xbf \t\r\n")[:64].lower()
    if start.startswith((b"<!doctype html", b"<html", b"<?xml", b"<head", b"<body")):
        return ("is an HTML/XML page, not the file (a download saved the server's page under its name): "
                "download it again")
    if binary and all(b in _TEXT_BYTES for b in head[:64]):
        return f"is a text file ({size} bytes), not the binary file its name says: download it again, or {LFS_FIX}"
    return None


def _pointer_field(head: bytes, key: bytes) -> str | None:
    for line in head.splitlines():
        if line.startswith(key):
            return line[len(key):].decode("ascii", "replace").strip()
    return None


def refuse_stand_in(path: Path, *, binary: bool) -> None:
    """Raise ``AuditError`` naming ``path`` when it is a stand-in (see :func:`describe`); else return.

    Only regular files are looked at (a FIFO is refused elsewhere and must not be opened here).
    """
    try:
        if not path.is_file():
            return
        size = path.stat().st_size
        with open(path, "rb") as fh:
            head = fh.read(HEAD_BYTES)
    except OSError:
        return  # the reader that follows reports it in its own words
    why = describe(head, size, binary=binary)
    if why is not None:
        raise AuditError(path, why)
