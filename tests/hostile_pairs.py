"""The second artifact of a pair (group "pairs"): ``--base BASE`` beside a full checkpoint and ``--draft DRAFT``,
damaged. The other artifact is read like the target (JSON and headers, never code): a broken one is one line
naming the flag (exit 2), and an EAGLE-3 map that would index past the target fails the gate."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

from malformed import CONFIG, case, safetensors_bytes, tiny_checkpoint, write_json

GROUP = "pairs"


def _other(folder: Path, name: str) -> Path:
    other = folder.parent / name
    tiny_checkpoint(other)
    return other


def _eagle(folder: Path, d2t_header: dict, data: bytes, **config: object) -> Path:
    draft = folder.parent / "draft"
    draft.mkdir()
    write_json(draft / "config.json", {**CONFIG, "architectures": ["LlamaForCausalLMEagle3"], **config})
    header = {"__metadata__": {"format": "pt"}, "d2t": d2t_header}
    (draft / "model.safetensors").write_bytes(safetensors_bytes(header, data))
    return draft


@case(GROUP, names="--base")
def base_config_not_json(folder: Path) -> list[str]:
    """The base's config.json is not JSON: one line naming --base and the file."""
    base = _other(folder, "base")
    (base / "config.json").write_text("{not json")
    return [str(folder), "--base", str(base)]


@case(GROUP, names="--base")
def base_is_a_file(folder: Path) -> list[str]:
    """--base names a file, not a folder (and not a Hub id)."""
    return [str(folder), "--base", str(folder / "config.json")]


@case(GROUP, names="--draft")
def draft_header_claims_more_than_the_file(folder: Path) -> list[str]:
    """An EAGLE draft whose d2t claims 2**40 entries in a file of a few bytes: refused from the header."""
    return [str(folder), "--draft", str(_eagle(folder, {"dtype": "I64", "shape": [2**40],
                                                          "data_offsets": [0, 8 * 2**40]}, bytes(8),
                                                  draft_vocab_size=2**40))]


@case(GROUP, exit_codes=(1,))
def draft_map_far_past_the_target(folder: Path) -> list[str]:
    """d2t offsets of 2**62 and -2**62: each maps a draft id outside the target's rows (HVA853 fails the gate)."""
    values = [2**62, -(2**62), 0, 0]
    draft = _eagle(folder, {"dtype": "I64", "shape": [4], "data_offsets": [0, 32]}, struct.pack("<4q", *values),
                   draft_vocab_size=4)
    return [str(folder), "--draft", str(draft)]


@case(GROUP, exit_codes=(1,))
def draft_map_of_floats(folder: Path) -> list[str]:
    """d2t stored as F32: not read as ids; the map cannot be checked, and the gate fails (HVA854)."""
    draft = _eagle(folder, {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}, bytes(16), draft_vocab_size=4)
    return [str(folder), "--draft", str(draft)]


@case(GROUP, exit_codes=(0,), says="HVA846")
def base_with_more_rows_and_a_copied_tokenizer(folder: Path) -> list[str]:
    """A base with twice the rows for the same tokens (the fine-tune was cut to len(tokenizer)): padding rows
    cut, HVA846 (a warning: every token keeps its row), with --weights reading only the rows it needs."""
    return [str(folder), "--base", str(padded_base(folder)), "--weights"]


def padded_base(folder: Path) -> Path:
    """A base beside ``folder`` with twice its rows (16) for the same tokens: the fine-tune was cut to
    len(tokenizer) (also the base of the "pairfix" group)."""
    base = _other(folder, "base")
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
