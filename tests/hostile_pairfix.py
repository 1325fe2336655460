"""``--fix`` beside ``--base BASE`` (group "pairfix"): the base is untrusted like the target; an output folder
placed inside the base is refused before anything is written (``--force`` would empty it). What ``--fix``
copies from a base, and when it refuses to, is tested in tests/fix/test_paired_edits.py (those runs write an
output folder, which this catalogue forbids next to its cases)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from malformed import case, safetensors_bytes, tiny_checkpoint, write_json

GROUP = "pairfix"


def _padded_base(folder: Path) -> Path:
    """A base with twice the fine-tune's rows for the same tokens (the fine-tune was cut to len(tokenizer))."""
    base = folder.parent / "base"
    tiny_checkpoint(base)
    rows, hidden = 16, 4
    size = rows * hidden * 4
    header = {"__metadata__": {"format": "pt"},
              "model.embed_tokens.weight": {"dtype": "F32", "shape": [rows, hidden], "data_offsets": [0, size]},
              "lm_head.weight": {"dtype": "F32", "shape": [rows, hidden], "data_offsets": [size, 2 * size]}}
    (base / "model.safetensors").write_bytes(safetensors_bytes(header, bytes(2 * size)))
    config = json.loads((base / "config.json").read_text())
    write_json(base / "config.json", {**config, "vocab_size": rows})
    shutil.copy(folder / "tokenizer.json", base / "tokenizer.json")
    return base


@case(GROUP, names="out")
def fix_output_inside_the_base(folder: Path) -> list[str]:
    """--output inside the --base folder: refused before --force could empty anything there."""
    base = _padded_base(folder)
    return [str(folder), "--base", str(base), "--fix", "--output", str(base / "out")]
