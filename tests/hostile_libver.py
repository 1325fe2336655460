"""Hostile inputs for ``--target 'transformers<5'`` (HVA97x): the files it reads beyond the static gate's
(``tokenizer_config.json``'s ``extra_special_tokens`` and ``tokenizer_class``, ``config.json``'s
``rope_parameters`` and ``model_type``) holding huge or ill-typed values. Each is audited with bounded messages
or refused with one line; none runs anything of the checkpoint."""

from __future__ import annotations

import json
from pathlib import Path

from malformed import case, write_json

GROUP = "libver"
TARGET = ["--target", "transformers<5"]


def _edit(path: Path, **values: object) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    data.update(values)
    write_json(path, data)


@case(GROUP, names="tokenizer.json", says="Unknown tokenizer version")
def tokenizer_json_version_of_a_megabyte(folder: Path) -> list[str]:
    """tokenizer.json's format "version" a megabyte of digits: the tokenizers library refuses it (as 4.x's
    tokenizers 0.22 would); one line, cut short."""
    _edit(folder / "tokenizer.json", version="9" * 2**20)
    return [str(folder), *TARGET]


@case(GROUP, exit_codes=(1,))
def extra_special_tokens_list_of_200k(folder: Path) -> list[str]:
    """A list of 200,000 extra special tokens (strings, dicts, numbers, nulls): HVA971 names three of them."""
    items: list[object] = [f"<x{i}>" for i in range(200_000)]
    items[1:4] = [{"content": "<d>"}, 7, None]
    _edit(folder / "tokenizer_config.json", extra_special_tokens=items)
    return [str(folder), *TARGET]


@case(GROUP, exit_codes=(1,))
def rope_parameters_of_a_megabyte(folder: Path) -> list[str]:
    """rope_parameters with a megabyte rope_type and rope_theta 1e308 and no top-level keys: HVA972's message
    quotes 80 characters of it."""
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    config.pop("rope_theta", None)
    config["rope_parameters"] = {"rope_type": "y" * 2**20, "rope_theta": 1e308, "factor": [[[]]] * 1000}
    write_json(folder / "config.json", config)
    return [str(folder), *TARGET]


@case(GROUP, exit_codes=(0, 1))
def rope_parameters_ill_typed(folder: Path) -> list[str]:
    """rope_parameters whose rope_theta is a string and whose rope_type is a list: nothing to quote as a value
    4.x loses (quiet for HVA972), no crash."""
    _edit(folder / "config.json", rope_parameters={"rope_type": ["llama3"], "rope_theta": "500000"})
    return [str(folder), *TARGET]


@case(GROUP, exit_codes=(1,))
def model_type_of_a_megabyte(folder: Path) -> list[str]:
    """config.json model_type a megabyte long: unknown to 4.57.6 (HVA974), quoted to 80 characters."""
    _edit(folder / "config.json", model_type="m" * 2**20)
    return [str(folder), *TARGET]
