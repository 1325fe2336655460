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


class _Bytes:
    """Consume fuzzer bytes deterministically (no atheris needed, so regressions replay anywhere)."""

    def __init__(self, data: bytes):
        self.data, self.at = data, 0

    def take(self, n: int) -> bytes:
        out = self.data[self.at : self.at + n]
        self.at += n
        return out

    def u32(self) -> int:
        return int.from_bytes(self.take(4).ljust(4, b"\0"), "little")

    def text(self) -> str:
        return self.take(self.u32() % 64).decode("utf-8", "replace")


def tokenizer_library_files(data: bytes) -> tuple[dict, dict, str]:
    """(tokenizer.json, tokenizer_config.json, a dataset row) from fuzzer bytes, steering the knobs the
    tokenizers library allocates by or panics on: fixed padding, pad_to_multiple_of, truncation stride,
    a precompiled_charsmap's trie size, Split and Replace regexes (catastrophic backtracking)."""
    import base64

    from malformed import TOKENIZER_CONFIG, tokenizer_json

    r = _Bytes(data)
    tok = tokenizer_json()
    choice = r.u32() % 6
    if choice == 0:
        tok["padding"] = {"strategy": {"Fixed": r.u32()} if r.u32() % 2 else "BatchLongest", "direction": "Right",
                          "pad_to_multiple_of": r.u32() or None, "pad_id": 3, "pad_type_id": 0, "pad_token": "<pad>"}
    elif choice == 1:
        tok["truncation"] = {"direction": "Right", "max_length": r.u32() % 64, "strategy": "LongestFirst",
                             "stride": r.u32() % 128}
    elif choice in (2, 5):
        charsmap = {"type": "Precompiled", "precompiled_charsmap": base64.b64encode(r.take(r.u32() % 64)).decode()}
        tok["normalizer"] = charsmap if choice == 2 else {"type": "Sequence", "normalizers": [{"type": "NFKC"}, charsmap]}
    elif choice == 3:
        tok["pre_tokenizer"] = {"type": "Split", "pattern": {"Regex": r.text()}, "behavior": "Isolated", "invert": False}
    else:
        tok["normalizer"] = {"type": "Replace", "pattern": {"Regex": r.text()}, "content": r.text()}
    row = r.take(len(data)).decode("utf-8", "replace")
    config = TOKENIZER_CONFIG | {"chat_template": "{{ m }}<|" + row[:60] + "|>", "model_input_names": ["input_ids",
                                                                                                      "token_type_ids"]}
    return tok, config, row * (1 + r.u32() % 4)


def check_tokenizer_library(folder: Path, data: bytes) -> None:
    """Audit a checkpoint whose tokenizer comes from :func:`tokenizer_library_files`, then scan one text
    row with it as ``--dataset`` does: a report or one AuditError line; a panic or an abort is a crash."""
    import json

    import pyarrow as pa

    from hf_vocab_audit import AuditError, audit
    from hf_vocab_audit.dataset.kernel import summarize
    from hf_vocab_audit.dataset.summary import ColumnRole, ScanContext
    from hf_vocab_audit.facts import gather
    from hf_vocab_audit.facts.limits import InputLimits

    tok, config, row = tokenizer_library_files(data)
    (folder / "tokenizer.json").write_text(json.dumps(tok), encoding="utf-8")
    (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    try:
        audit(folder)
        tokenizer = gather(folder).tokenizer
        assert tokenizer is not None
        ctx = ScanContext("rows.jsonl", "train", (ColumnRole("text", "text"),), InputLimits(input_rows=8, tokenizer_max_id=8),
                          tokenizer.backend, tokenizer_file=str(folder / "tokenizer.json"))
        summarize(pa.table({"text": [row, "a b"]}), 0, ctx)
    except AuditError as exc:
        text = str(exc)
        if "\n" in text or "\r" in text or not text.startswith(str(folder)):
            raise AssertionError(f"error is not one line naming a file: {text!r}") from None


def with_header_length(data: bytes) -> bytes:
    """Input starting with ``{``: a safetensors header JSON (up to its last ``}``) plus data bytes, given
    its correct 8-byte length so mutations reach the JSON checks; any other input is the raw file."""
    if data[:1] != b"{":
        return data
    end = data.rfind(b"}") + 1
    return struct.pack("<Q", end) + data[:end] + data[end:]


def main(target: str, seeds: str, transform: Callable[[bytes], bytes] | None = None,
         run: Callable[[Path, bytes], None] | None = None) -> None:
    """``python fuzz/fuzz_X.py [-max_total_time=60] [libFuzzer flags] [CORPUS_DIR ...]``; ``run`` replaces
    the default one-file check (structured targets)."""
    import atheris

    with atheris.instrument_imports(include=["hf_vocab_audit"]):
        import hf_vocab_audit.audit  # noqa: F401
        import hf_vocab_audit.dataset.kernel  # noqa: F401
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
    one = run or (lambda f, data: check(f, target, transform(data) if transform else data))
    atheris.Setup(argv, lambda data: one(folder, data))
    atheris.Fuzz()
