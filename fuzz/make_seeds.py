"""Regenerate fuzz/seeds/<target>/ from the healthy tiny checkpoint and the hostile catalogue
(tests/malformed.py): every small regular file a case leaves at the fuzzed path becomes a seed."""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from pathlib import Path

import _harness  # noqa: F401  (sys.path)
from malformed import CASES, tiny_checkpoint

TARGETS = {"headers": "model.safetensors", "config": "config.json",
           "tokenizer_config": "tokenizer_config.json", "tokenizer": "tokenizer.json"}
MAX_SEED = 64 * 1024


def main() -> None:
    out = Path(__file__).resolve().parent / "seeds"
    shutil.rmtree(out, ignore_errors=True)
    with tempfile.TemporaryDirectory() as tmp:
        folders = [tiny_checkpoint(Path(tmp) / "healthy")]
        for c in CASES:
            root = Path(tmp) / c.name
            root.mkdir()
            c.build(root / "ckpt")
            folders.append(root / "ckpt")
        for seeds, name in TARGETS.items():
            (out / seeds).mkdir(parents=True)
            for folder in folders:
                path = folder / name
                if path.is_file() and not path.is_symlink() and path.stat().st_size <= MAX_SEED:
                    data = path.read_bytes()
                    (out / seeds / hashlib.sha1(data).hexdigest()[:16]).write_bytes(data)
                    if seeds == "headers" and data[8:9] == b"{":  # the JSON alone: fuzz_headers adds the length
                        (out / seeds / hashlib.sha1(data[8:]).hexdigest()[:16]).write_bytes(data[8:])
    (out / "tokenizer_library").mkdir()
    for name, data in library_seeds().items():
        (out / "tokenizer_library" / name).write_bytes(data)
    for seeds in [*TARGETS, "tokenizer_library"]:
        print(seeds, len(list((out / seeds).iterdir())))


def _u32(n: int) -> bytes:
    return n.to_bytes(4, "little")


def library_seeds() -> dict[str, bytes]:
    """Inputs for fuzz_tokenizer_library.py (see _harness.tokenizer_library_files): each knob at a value
    that once panicked or aborted the library; also the replayed regressions."""
    regex = b"(a|a?)+$"
    return {
        "padding-fixed-2-pow-31": _u32(0) + _u32(1) + _u32(2**31) + _u32(0) + b"a b c",
        "pad-to-multiple-of-2-pow-31": _u32(0) + _u32(0) + _u32(2**31) + b"a b",
        "truncation-stride-over-max-length": _u32(1) + _u32(1) + _u32(10) + b"a b c d e",
        "charsmap-trie-4gib": _u32(2) + _u32(8) + b"\xfc\xff\xff\xffabcd" + b"a b",
        "charsmap-in-sequence": _u32(5) + _u32(20) + b"\x00\x00\x00\x40" + bytes(16) + b"a",
        "split-catastrophic-regex": _u32(3) + _u32(len(regex)) + regex + b"a" * 40 + b"b",
        "replace-catastrophic-regex": _u32(4) + _u32(len(regex)) + regex + _u32(1) + b"x" + b"a" * 40 + b"b",
        "split-invalid-regex": _u32(3) + _u32(4) + b"((((" + b"a",
        "long-row": _u32(3) + _u32(1) + b" " + b"x" * 60 + _u32(3),
    }


if __name__ == "__main__":
    main()
