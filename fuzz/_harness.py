"""Shared fuzz harness: put the fuzzer's bytes in one file of a healthy tiny checkpoint and audit it.

The only allowed outcomes are a report or an ``AuditError`` whose message is one line naming a file;
any other exception is a crash that libFuzzer saves (``-artifact_prefix``, default ``fuzz/crashes/``).
"""

from __future__ import annotations

import os
import shutil
import struct
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def prepare(target: str) -> Path:
    """A tiny healthy checkpoint in a temporary folder; the fuzzed file is ``folder / target``."""
    from malformed import tiny_checkpoint

    folder = tiny_checkpoint(Path(tempfile.mkdtemp(prefix=f"fuzz-{Path(target).stem}-")) / "ckpt")
    return folder


def check(folder: Path, target: str, data: bytes) -> None:
    """Audit ``folder`` with ``data`` as ``target``; raise on anything but a report or a one-line AuditError."""
    from hf_vocab_audit import AuditError, audit
    from hf_vocab_audit.formats import render

    (folder / target).write_bytes(data)
    try:
        report = audit(folder)
    except AuditError as exc:
        text = str(exc)
        if "\n" in text or "\r" in text or not text.startswith(str(folder)):
            raise AssertionError(f"error is not one line naming a file: {text!r}") from None
        return
    render(report, "text")
    render(report, "json")


def with_header_length(data: bytes) -> bytes:
    """Input starting with ``{``: a safetensors header JSON (up to its last ``}``) plus data bytes, given
    its correct 8-byte length so mutations reach the JSON checks; any other input is the raw file."""
    if data[:1] != b"{":
        return data
    end = data.rfind(b"}") + 1
    return struct.pack("<Q", end) + data[:end] + data[end:]


def main(target: str, seeds: str, transform: Callable[[bytes], bytes] | None = None) -> None:
    """``python fuzz/fuzz_X.py [-max_total_time=60] [libFuzzer flags] [CORPUS_DIR ...]``."""
    import atheris

    with atheris.instrument_imports(include=["hf_vocab_audit"]):
        import hf_vocab_audit.audit  # noqa: F401
        import hf_vocab_audit.formats  # noqa: F401

    folder = prepare(target)
    argv = list(sys.argv)
    if not any(not a.startswith("-") for a in argv[1:]):  # no corpus dir given: a temporary copy of the seeds
        corpus = Path(tempfile.mkdtemp(prefix="fuzz-corpus-"))
        for seed in sorted((ROOT / "fuzz" / "seeds" / seeds).glob("*")):
            shutil.copy(seed, corpus / seed.name)
        argv.append(str(corpus))
    if not any(a.startswith("-dict=") for a in argv):
        argv.append(f"-dict={ROOT / 'fuzz' / 'dicts' / 'json.dict'}")
    if not any(a.startswith("-artifact_prefix=") for a in argv):
        crashes = ROOT / "fuzz" / "crashes"
        crashes.mkdir(exist_ok=True)
        argv.append(f"-artifact_prefix={crashes}/{seeds}-")
    atheris.Setup(argv, lambda data: check(folder, target, transform(data) if transform else data))
    atheris.Fuzz()
