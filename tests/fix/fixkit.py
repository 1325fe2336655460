"""Helpers for the --fix tests: broken tiny checkpoints, folder hashes, state dicts."""

from __future__ import annotations

import hashlib
from pathlib import Path

import torch
from builders import make_model, make_tokenizer

ADDED = ["<|im_start|>", "<|im_end|>"]


def tree_hashes(folder: Path) -> dict[str, str]:
    """sha256 of every file under ``folder`` (relative path -> digest)."""
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def broken(folder: Path, kind: str = "llama", rows: int = 104, *, dtype=torch.float32, added=ADDED, **config) -> Path:
    """A tiny checkpoint whose tokenizer gained ``added`` tokens without a resize."""
    make_model(folder, kind, rows, dtype=dtype, **config)
    style = {"bert": "bert", "bart": "roberta"}.get(kind, "llama")
    make_tokenizer(folder, rows, style=style, added_special=list(added))
    return folder


def state(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    out: dict[str, torch.Tensor] = {}
    for f in sorted(folder.glob("*.safetensors")):
        out.update(load_file(str(f)))
    return out


