"""Folders from untrusted sources: every entry, at any depth, is a regular file or folder inside the folder.

transformers opens files by names we do not control (``additional_chat_templates/*.jinja``,
``tokenizer.model``), ``--fix`` copies the whole folder, and ``datasets`` globs data folders
recursively. A link out of the folder (to ``~/.ssh/id_rsa`` or a CI secret), a device (``/dev/zero``: a
copy that fills the disk) or a FIFO (a read that blocks forever) anywhere below it is refused with one
line before any of them opens anything. Links inside the folder are allowed (the Hugging Face cache is
made of them) but never descended into: a directory link can make a tree exponentially large.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

from ..errors import AuditError
from ..io.jsonfile import check_inside

SKIPPED_DIRS = (".git", ".cache")  # never read by transformers, never copied by --fix
MAX_ENTRIES = 1_000_000  # a model or dataset folder with more entries is refused, not walked forever


def regular_file(path: Path, kinds: str = "a FIFO, socket or device") -> Path:
    """``path`` when it is (or links to) a regular file: reading a FIFO or a device blocks or never ends."""
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        raise AuditError(path, f"cannot be read: {exc.strerror or exc.__class__.__name__}") from None
    if not stat.S_ISREG(mode):
        raise AuditError(path, f"is not a regular file ({kinds})")
    return path


def regular_file_inside(path: Path, root: Path, what: str = "model folder") -> Path:
    """``path`` if it is a regular file that resolves inside ``root`` (or a Hub cache blob), else one line."""
    if path.is_symlink():
        check_inside(path, root, what)
    regular_file(path, "a folder, FIFO, socket or device")
    if not path.is_symlink():
        check_inside(path, root, what)  # a parent folder may itself be a link
    return path


def check_tree(root: Path, what: str = "model folder") -> None:
    """Refuse ``root`` when any entry below it (links not followed) is a FIFO, socket or device, or a link
    that leaves ``root``; or when it holds more than :data:`MAX_ENTRIES` entries."""
    seen = 0
    for top, dirs, files in os.walk(root, followlinks=False, onerror=_raise(root)):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        for name in sorted(dirs + files):
            seen += 1
            if seen > MAX_ENTRIES:
                raise AuditError(root, f"the {what} holds over {MAX_ENTRIES:,} entries")
            entry = Path(top) / name
            try:
                info = entry.lstat()
            except OSError as exc:
                raise AuditError(entry, f"cannot be read: {exc.strerror or exc.__class__.__name__}") from None
            if stat.S_ISLNK(info.st_mode):
                check_inside(entry, root, what)
                try:
                    mode = entry.stat().st_mode
                except OSError as exc:
                    raise AuditError(entry, f"cannot be read: {exc.strerror or exc.__class__.__name__}") from None
                if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                    raise AuditError(entry, "links to something that is not a regular file (a FIFO, socket or device)")
            elif not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
                raise AuditError(entry, "is not a regular file (a FIFO, socket or device)")


def _raise(root: Path) -> Callable[[OSError], None]:
    def onerror(exc: OSError) -> None:
        raise AuditError(exc.filename or root, f"cannot be listed: {exc.strerror or exc.__class__.__name__}")

    return onerror


def existing_folder(path: Path, what: str) -> Path:
    if not path.exists():
        raise AuditError(path, f"{what} does not exist")
    if not path.is_dir():
        raise AuditError(path, f"{what} must be a folder, not a file")
    return path
