"""Byte-for-byte copies: whole files (a reflink where the filesystem has them, else the kernel's
``copy_file_range``) and byte ranges between open files, with no byte through Python where the kernel can.

The fix writer's tools (``fix/surgical.py`` decides what to copy; this module only moves bytes).
"""

from __future__ import annotations

import os
from io import RawIOBase
from pathlib import Path
from typing import Any  # copy_range's source: any open binary file, buffered or not

from ..errors import AuditError

CHUNK_BYTES = 64 * 1024 * 1024  # streaming copies


def write_all(dst: RawIOBase, data: bytes | memoryview, at: int | None = None) -> None:
    """Write all of ``data`` to the end of ``dst`` (an unbuffered file), or at offset ``at``."""
    view = memoryview(data)
    if at is not None:
        os.lseek(dst.fileno(), at, os.SEEK_SET)  # one thread writes each file: no positional write needed
    while view:
        view = view[dst.write(view) :]


def copy_range(src: Any, dst: RawIOBase, offset: int, length: int, at: int | None = None) -> None:
    """Copy ``length`` bytes at ``offset`` of ``src`` to the end of ``dst`` (an unbuffered file), or to
    offset ``at`` of ``dst``: by the kernel (``os.copy_file_range``, no byte through this process) where
    it can, else through one reused buffer."""
    out = dst.fileno()
    pos = os.lseek(out, 0, os.SEEK_END) if at is None else at
    done = 0
    if hasattr(os, "copy_file_range"):
        try:
            while done < length:
                n = os.copy_file_range(src.fileno(), out, length - done, offset + done, pos + done)
                if n == 0:
                    break
                done += n
        except OSError as exc:
            if done or exc.errno not in (18, 22, 38, 95):  # EXDEV, EINVAL, ENOSYS, EOPNOTSUPP: fall back
                raise
    buf = memoryview(bytearray(min(CHUNK_BYTES, length - done))) if done < length else None
    src.seek(offset + done)
    while buf is not None and done < length:
        n = src.readinto(buf[: min(len(buf), length - done)])
        if not n:
            raise AuditError(src.name, f"ended {length - done} bytes early while copying")
        write_all(dst, buf[:n], pos + done)
        done += n
    if at is None:
        os.lseek(out, pos + done, os.SEEK_SET)


FICLONE = 0x40049409  # linux/fs.h: _IOW(0x94, 9, int)


def reflink(src: Path, dst: Path) -> bool:
    """Make ``dst`` a copy-on-write clone of ``src`` (Btrfs, XFS with reflink, bcachefs, ZFS 2.2+, OCFS2):
    instant, no byte written, and safe: a later write to either file copies the blocks it touches,
    unlike a hard link. False (``dst`` left empty) where the filesystem or platform cannot."""
    try:
        import fcntl
    except ImportError:  # not on a POSIX system
        return False
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        try:
            fcntl.ioctl(fout.fileno(), FICLONE, fin.fileno())
        except OSError:
            return False
    return True


def copy_file(src: Path, dst: Path) -> None:
    """Byte-for-byte copy of an untouched file: a reflink where the filesystem has them, else the
    kernel's own copy (``copy_file_range``, as ``cp`` does: no bytes through Python)."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    if src.stat().st_size and reflink(src, dst):
        return
    with open(src, "rb") as fin, open(dst, "wb", buffering=0) as fout:
        copy_range(fin, fout, 0, os.fstat(fin.fileno()).st_size)
