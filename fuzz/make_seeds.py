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
    for seeds in TARGETS:
        print(seeds, len(list((out / seeds).iterdir())))


if __name__ == "__main__":
    main()
