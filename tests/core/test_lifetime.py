"""core.lifetime: the command line's exit keeps the exit status, runs the exit handlers and flushes the output
(it only skips freeing what the audit read); a library caller keeps nothing and exits as Python does."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from hf_vocab_audit.core.lifetime import exit_code_of

SCRIPT = """
import atexit, sys
from hf_vocab_audit.core import lifetime
atexit.register(lambda: print("handler ran", file=sys.stderr))
if sys.argv[1] == "keep":
    lifetime.keep_for_the_process()
lifetime.keep_until_exit(bytearray(10))
sys.stdout.write("x" * 200000)  # more than a pipe holds: still buffered when the exit starts
lifetime.exit_now(int(sys.argv[2]))
"""


@pytest.mark.parametrize("mode", ["keep", "library"])
@pytest.mark.parametrize("code", [0, 1, 2])
def test_the_exit_keeps_status_output_and_handlers(mode: str, code: int) -> None:
    proc = subprocess.run([sys.executable, "-c", SCRIPT, mode, str(code)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == code
    assert proc.stdout == "x" * 200000
    assert "handler ran" in proc.stderr


def test_the_exit_code_of_a_system_exit_is_pythons() -> None:
    assert exit_code_of(SystemExit()) == 0
    assert exit_code_of(SystemExit(3)) == 3
    assert exit_code_of(SystemExit("bad input")) == 1


CLOSED = """
import sys
from hf_vocab_audit.core import lifetime
if sys.argv[1] == "keep":
    lifetime.keep_for_the_process()
lifetime.keep_until_exit(object())
sys.stdout.write("the report\\n")  # buffered: written when the exit flushes it
sys.stdin.readline()  # the reader has gone by now
lifetime.exit_now(int(sys.argv[2]))
"""


@pytest.mark.parametrize("mode", ["keep", "library"])
def test_output_that_cannot_be_written_is_not_a_silent_pass(mode: str) -> None:
    """A reader that left before the output was flushed: exit 120 as Python itself does (the command keeps a
    failing status of its own; Python turns it into 120), never 0 with nothing said."""
    for code, expected in ((0, {120}), (1, {1, 120})):
        env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # the report must sit in a buffer
        proc = subprocess.Popen([sys.executable, "-c", CLOSED, mode, str(code)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        assert proc.stdout is not None and proc.stdin is not None
        proc.stdout.close()
        _, err = proc.communicate(b"\n", timeout=60)
        assert proc.returncode in expected, err
        assert err.strip(), "the failed write is reported on stderr"
