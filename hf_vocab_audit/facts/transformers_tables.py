"""Per-architecture defaults from transformers, stored as data so the fast path never imports it.

``generate()`` (run by ``python scripts/regenerate.py``) reads them from the installed transformers;
``tests/facts/test_transformers_tables.py`` fails when the stored table is stale.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

TABLE_PATH = Path(__file__).resolve().parent.parent / "data" / "transformers_tables.json"
DEFAULT_INPUT_NAMES = ["input_ids", "attention_mask"]


@lru_cache(maxsize=1)
def tables() -> dict[str, Any]:
    return json.loads(TABLE_PATH.read_text(encoding="utf-8"))


def default_tie_word_embeddings(model_type: str | None) -> bool:
    """The config class's default ``tie_word_embeddings`` (transformers' own fallback is False)."""
    return bool(tables()["tie_word_embeddings"].get(model_type or "", False))


def tokenizer_class_for(model_type: str | None) -> str | None:
    return tables()["tokenizer_class"].get(model_type or "")


def model_input_names(tokenizer_class: str | None) -> list[str]:
    names = tables()["model_input_names"]
    if tokenizer_class:
        for candidate in (tokenizer_class, tokenizer_class.removesuffix("Fast")):
            if candidate in names:
                return list(names[candidate])
    return list(DEFAULT_INPUT_NAMES)


def generate() -> dict[str, Any]:
    """Read the tables from the installed transformers (imports torch; slow, run offline)."""
    import importlib
    import warnings

    import transformers

    transformers.logging.set_verbosity_error()
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES
    from transformers.models.auto.tokenization_auto import TOKENIZER_MAPPING_NAMES

    tie: dict[str, bool] = {}
    for model_type, class_name in sorted(CONFIG_MAPPING_NAMES.items()):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cfg = getattr(transformers, class_name)()
            value = getattr(cfg, "tie_word_embeddings", None)
            if value is None and hasattr(cfg, "get_text_config"):
                value = getattr(cfg.get_text_config(), "tie_word_embeddings", None)
        except Exception:  # noqa: BLE001 - some configs cannot be built with defaults
            continue
        if isinstance(value, bool):
            tie[model_type] = value
    tokenizer_class = {
        k: (v[0] if isinstance(v, (tuple, list)) else v)
        for k, v in sorted(TOKENIZER_MAPPING_NAMES.items())
        if (v[0] if isinstance(v, (tuple, list)) else v)
    }
    input_names: dict[str, list[str]] = {}
    for class_name in sorted({c for c in tokenizer_class.values() if c is not None}):
        cls = getattr(transformers, class_name, None)
        if cls is None:
            try:
                cls = getattr(importlib.import_module("transformers"), class_name)
            except Exception:  # noqa: BLE001
                continue
        try:
            names = getattr(cls, "model_input_names", None)
        except ImportError:  # a backend this machine lacks
            continue
        if isinstance(names, list) and names != DEFAULT_INPUT_NAMES:
            input_names[class_name] = list(names)
    return {
        "transformers_version": transformers.__version__,
        "tie_word_embeddings": tie,
        "tokenizer_class": tokenizer_class,
        "model_input_names": input_names,
    }


def write() -> Path:
    TABLE_PATH.parent.mkdir(parents=True, exist_ok=True)
    TABLE_PATH.write_text(json.dumps(generate(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return TABLE_PATH
