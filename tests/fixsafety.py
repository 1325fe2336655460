"""Fault injection for anything that writes a checkpoint (``--fix``): promise 3, "nothing lost".

A fix test hashes the input before and after (``tree_state``), interrupts the writer (``run_killed`` at a
random moment, ``run_with_file_size_limit`` or ``small_tmpfs`` for a full disk, ``enospc_after`` in
process), then asserts ``no_partial_output`` and that rerunning succeeds. docs/robustness.md lists what
the --fix tests must cover; ``tests/test_fixsafety.py`` shows each tool catching a naive writer.
"""

from __future__ import annotations

import builtins
import contextlib
import errno
import hashlib
import io
import os
import resource
import signal
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path


def tree_state(root: Path) -> dict[str, str]:
    """Every entry under ``root``: content hash (size+mtime above 64 MiB, for sparse test files), link, kind."""
    out: dict[str, str] = {}
    if not root.exists():
        return out
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            out[rel] = "link:" + os.readlink(path)
        elif stat.S_ISREG(info.st_mode):
            if info.st_size > 64 * 2**20:
                out[rel] = f"big:{info.st_size}:{info.st_mtime_ns}"
            else:
                out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            out[rel] = f"mode:{stat.S_IFMT(info.st_mode)}"
    return out


def run_killed(cmd: list[str], after_s: float, **kwargs) -> int | None:
    """Start ``cmd``, SIGKILL it after ``after_s`` seconds; its exit code when it finished first, else None."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kwargs)
    try:
        return proc.wait(timeout=after_s)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        return None


def run_killed_after(cmd: list[str], appears: tuple[Path, str], after_s: float, timeout: float = 300,
                     **kwargs) -> tuple[int | None, bool]:
    """Start ``cmd``; once a path matching ``appears`` (folder, glob) exists, wait ``after_s`` and SIGKILL it.
    Aims the kill at the writing phase instead of interpreter start-up. Returns (exit code or None if
    killed, whether the path was seen)."""
    folder, pattern = appears
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kwargs)
    deadline = time.monotonic() + timeout
    seen = False
    while proc.poll() is None and time.monotonic() < deadline:
        if any(folder.glob(pattern)):
            seen = True
            break
        time.sleep(0.0005)
    if seen:
        time.sleep(after_s)
    if proc.poll() is not None:
        return proc.returncode, seen
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    return None, seen


def run_with_file_size_limit(cmd: list[str], max_bytes: int, **kwargs) -> subprocess.CompletedProcess:
    """Run ``cmd`` where no file can grow past ``max_bytes`` (RLIMIT_FSIZE; writes fail with EFBIG, as on a
    full disk, for Python and native writers alike; no mount needed)."""

    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (max_bytes, max_bytes))

    return subprocess.run(cmd, capture_output=True, text=True, preexec_fn=limit, check=False, **kwargs)


@contextlib.contextmanager
def small_tmpfs(size: str = "1m") -> Iterator[Path | None]:
    """A tmpfs of ``size`` (a real full disk: ENOSPC) where mounting works (root), else None."""
    where = Path(tempfile.mkdtemp(prefix="tmpfs-"))
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                             capture_output=True, check=False).returncode == 0
    try:
        yield where if mounted else None
    finally:
        if mounted:
            subprocess.run(["umount", str(where)], capture_output=True, check=False)
        where.rmdir()


@contextlib.contextmanager
def enospc_after(max_bytes: int) -> Iterator[None]:
    """In process: files opened for writing through ``open``/``io.open``/``Path.open`` raise
    ``OSError(ENOSPC)`` once ``max_bytes`` have been written in total. Native writers (safetensors' Rust
    code) bypass it: use ``run_with_file_size_limit`` or ``small_tmpfs`` for those."""
    written = [0]
    real_open = io.open

    def guarded_open(file, mode="r", *args, **kwargs):
        handle = real_open(file, mode, *args, **kwargs)
        if not any(c in mode for c in "wax+"):
            return handle
        raw_write = handle.write

        def write(data):
            size = len(data.encode() if isinstance(data, str) else data)
            if written[0] + size > max_bytes:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(file))
            written[0] += size
            return raw_write(data)

        handle.write = write  # type: ignore[method-assign]
        return handle

    with contextlib.ExitStack() as stack:
        for owner in (builtins, io):
            stack.enter_context(_patched(owner, "open", guarded_open))
        yield


@contextlib.contextmanager
def _patched(owner: object, name: str, value: object) -> Iterator[None]:
    old = getattr(owner, name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, old)


def no_partial_output(target: Path, complete: dict[str, str], parent_before: set[str],
                      temp_prefix: str | None = None) -> list[str]:
    """Problems after an interrupted write: ``target`` must be absent or identical to a complete run's
    output (``complete`` = its ``tree_state``); nothing else may be left next to it except entries named
    ``temp_prefix*`` (a writer's staging folder, which its next run must remove: check that too)."""
    problems = []
    if target.exists():
        state = tree_state(target) if target.is_dir() else {"": tree_state(target.parent).get(target.name, "")}
        if state != complete:
            problems.append(f"{target} holds a partial output ({len(state)} of {len(complete)} entries match?)")
    leftovers = {p.name for p in target.parent.iterdir()} - parent_before - {target.name}
    leftovers = {n for n in leftovers if not (temp_prefix and n.startswith(temp_prefix))}
    if leftovers:
        problems.append(f"left behind next to the target: {sorted(leftovers)}")
    return problems


def random_kill_points(seconds: float, n: int, seed: int = 0) -> list[float]:
    """``n`` reproducible kill delays spread over ``(0, seconds)``."""
    import random

    rnd = random.Random(seed)
    return sorted(rnd.uniform(0.01, seconds) for _ in range(n))


def timed(cmd: list[str], **kwargs) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, capture_output=True, check=True, **kwargs)
    return time.perf_counter() - start
