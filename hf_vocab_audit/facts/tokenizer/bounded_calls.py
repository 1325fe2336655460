"""Calling the ``tokenizers`` library on an untrusted tokenizer: bounded work, and failures as one line.

The library (Rust) has two failure modes ``except Exception`` does not catch: a panic surfaces as
``pyo3_runtime.PanicException``, a ``BaseException`` (a catastrophic regex hitting Oniguruma's retry
limit, a truncation stride >= max length, an unparsable ``precompiled_charsmap``), and an absurd
allocation aborts the whole process ("memory allocation of N bytes failed": fixed padding to 2^31, a
charsmap claiming a 4 GiB trie, one 32 MB word). So: :func:`unbounded_options_off` strips padding and
truncation from every loaded tokenizer, :func:`check_precompiled_charsmaps` validates what a normalizer
will allocate before the library parses it, the dataset scan caps the text per row, and every call runs
inside :func:`library_call`, which turns a failure into an :class:`AuditError` naming the file and keeps
the panic's report (written by Rust straight to file descriptor 2) off standard error.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import os
import struct
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ...errors import AuditError
from ...io.jsonfile import values_of_key
from .normalizer_growth import check_growth

MAX_TEXT_CHARS = 1_000_000  # characters of one dataset row handed to the library at once

_FD_LOCK = threading.RLock()


def is_panic(exc: BaseException) -> bool:
    """A Rust panic raised through pyo3 (its class is not importable under a stable name)."""
    return type(exc).__name__ == "PanicException"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else exc.__class__.__name__)[:300]


@contextlib.contextmanager
def _native_stderr_captured() -> Iterator[None]:
    """Send file descriptor 2 to a temporary file while native code runs: a panic prints its report and
    backtrace there, bypassing ``sys.stderr``. Nothing else writes to standard error during these calls."""
    with _FD_LOCK:
        try:
            sys.stderr.flush()
            saved = os.dup(2)
        except (OSError, ValueError, AttributeError):
            yield
            return
        with tempfile.TemporaryFile() as sink:
            os.dup2(sink.fileno(), 2)
            try:
                yield
            finally:
                os.dup2(saved, 2)
                os.close(saved)


@contextlib.contextmanager
def library_call(path: str | Path, what: str = "the tokenizers library failed") -> Iterator[None]:
    """Run tokenizers-library calls; any failure, a panic included, becomes one line naming ``path``."""
    try:
        with _native_stderr_captured():
            yield
    except AuditError:
        raise
    except Exception as exc:  # noqa: BLE001 - the library raises plain Exception for bad input
        raise AuditError(path, f"{what}: {_first_line(exc)}") from None
    except BaseException as exc:
        if is_panic(exc):
            raise AuditError(path, f"{what} (a panic in the library): {_first_line(exc)}") from None
        raise


def unbounded_options_off(backend: Any) -> Any:
    """The tokenizer without padding and truncation: a stored ``Fixed(2**31)`` padding is honoured by
    every encode (an abort), and a stride >= max length panics. The audit encodes as a training script
    does by default, without either."""
    backend.no_padding()
    backend.no_truncation()
    return backend


def check_precompiled_charsmaps(raw: bytes, path: Path) -> None:
    """Refuse a ``precompiled_charsmap`` whose declared trie does not fit in its bytes.

    The library reads the first 4 bytes as the trie size and allocates that much before checking it
    (a claim of 2^32 aborts the process). Found by a byte search, so the vocabulary is never parsed twice.
    """
    for begin in values_of_key(raw, "precompiled_charsmap"):
        if raw[begin : begin + 1] != b'"':
            continue  # null or another type: the library refuses it with an ordinary error
        try:
            value, _ = json.JSONDecoder().raw_decode(raw[begin : raw.find(b'"', begin + 1) + 1].decode("utf-8"))
            blob = base64.b64decode(value, validate=True)
        except (ValueError, binascii.Error):
            raise AuditError(path, "precompiled_charsmap is not valid base64") from None
        check_charsmap_blob(blob, path)


def check_charsmap_blob(blob: bytes, path: Path) -> None:
    """The library allocates the trie size in the first 4 bytes before checking it against the blob."""
    if len(blob) < 4:
        raise AuditError(path, f"precompiled_charsmap holds {len(blob)} bytes, too few for its trie size")
    (trie_size,) = struct.unpack("<I", blob[:4])
    if trie_size % 4 or 4 + trie_size > len(blob):
        raise AuditError(path, f"precompiled_charsmap declares a {trie_size}-byte trie in {len(blob)} bytes")
    check_growth({"type": "Precompiled", "precompiled_charsmap": blob}, path, "precompiled_charsmap")
