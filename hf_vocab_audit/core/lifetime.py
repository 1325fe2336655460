"""Objects kept until the process ends, and an exit that does not free them.

Freeing a parsed 128k-token tokenizer takes about 30 ms (its vocabulary, merges and caches, in Rust): a
tenth of the static gate's own work, spent after the verdict is printed. The command line, and only it,
turns keeping on (:func:`keep_for_the_process`) and ends with :func:`exit_now`: the ``atexit`` handlers
run and the standard streams are flushed, then the process leaves without tearing the interpreter down,
as mypy's command does. A library caller never turns it on, so nothing is kept there.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import NoReturn

_KEPT: list[object] | None = None


def keep_for_the_process() -> None:
    """From now on, :func:`keep_until_exit` keeps what it is given (the command line's choice)."""
    global _KEPT
    if _KEPT is None:
        _KEPT = []


def keep_until_exit(obj: object) -> None:
    """Keep ``obj`` alive until :func:`exit_now` (nothing happens unless the command line asked for it)."""
    if _KEPT is not None:
        _KEPT.append(obj)


def exit_code_of(exc: SystemExit) -> int:
    """The status Python itself gives a ``SystemExit``: None is 0, an int is itself, anything else is
    printed to stderr and is 1."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    print(exc.code, file=sys.stderr)
    return 1


def exit_now(code: int) -> NoReturn:
    """Leave with ``code``. Where something was kept and no other non-daemon thread still runs: the exit
    handlers, then flushed streams, then ``os._exit`` (no teardown); otherwise an ordinary ``sys.exit``."""
    others = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon and t.is_alive()]
    if not _KEPT or others:
        sys.exit(code)
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
    except (OSError, ValueError) as exc:  # as Python itself ends then: a line on stderr, and 120 unless failing
        print(f"hf-vocab-audit: error: the output could not be written ({exc.__class__.__name__})", file=sys.stderr)
        code = code or 120
    try:
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os._exit(code)
