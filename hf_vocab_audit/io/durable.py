"""Putting written files on the disk: ``fdatasync`` a file, ``fsync`` a folder (a rename inside it), and a
:class:`Flusher` that syncs finished files from a background thread while the rest is written.

The fix writer's tools (``fix/writer.py`` decides what is written where; this module makes it durable).
"""

from __future__ import annotations

import contextlib
import os
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path


def sync_folder(folder: Path) -> None:
    """Make the entries of ``folder`` (a rename into it) durable, where the platform can open a folder."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def datasync(path: Path) -> None:
    """Put ``path``'s data on the disk (Windows syncs only through a handle opened for writing)."""
    fd = os.open(path, os.O_RDWR if os.name == "nt" else os.O_RDONLY)
    try:
        os.fdatasync(fd) if hasattr(os, "fdatasync") else os.fsync(fd)
    finally:
        os.close(fd)


class Flusher:
    """Puts finished files on the disk from a background thread while the rest is written and verified,
    then makes the whole temporary folder durable before it is renamed into place: after a crash or a
    power loss the target holds nothing or the complete checkpoint, never renamed-but-unwritten files.

    The disk writes overlap the verification instead of following the command (where page-cache
    writeback would otherwise do them: the same bytes, later)."""

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1)
        self._jobs: list[Future[None]] = []

    def add(self, path: Path) -> None:
        """Start writing ``path`` (complete, not to be written again) to the disk."""
        self._jobs.append(self._pool.submit(datasync, path))

    def finish(self, folder: Path) -> None:
        """Wait for the files added, then make every file and folder under ``folder`` durable (files
        already on the disk cost a check)."""
        try:
            for job in self._jobs:
                job.result()
            dirs = [folder]
            for root, names, files in os.walk(folder):
                dirs += [Path(root) / d for d in names]
                for name in files:
                    datasync(Path(root) / name)
            for d in dirs:
                with contextlib.suppress(OSError):  # folders cannot be opened for syncing everywhere
                    datasync(d)
        finally:
            self.close()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
