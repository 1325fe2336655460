"""Token ids that ``generate()`` indexes with, beyond bos/eos/pad/decoder-start (those are in config.py).

transformers 5 reads generation settings from ``generation_config.json`` when the file exists, and then
never reads the same keys in ``config.json``; without the file it builds them from ``config.json``. What
each key does with an id past the vocabulary was measured by running ``generate()`` (the tests do too):

- ``forced_bos_token_id``, ``forced_eos_token_id``, ``no_timestamps_token_id``, ``forced_decoder_ids``,
  Whisper's ``lang_to_id`` / ``task_to_id`` values: an ``IndexError`` (a device-side assert on a GPU);
- ``bad_words_ids`` (and ``sequence_bias``): a ``ValueError`` naming the ids;
- ``suppress_tokens``, ``begin_suppress_tokens``: silently ignored (the token is not suppressed);
- a negative ``forced_bos/eos_token_id`` wraps around and forces another token, silently.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import AuditError
from .config import ConfigFacts, GenerationFacts

# key -> what happens to an out-of-range id: "crash" (an exception in generate()) or "ignored".
SINGLE_KEYS = {"forced_bos_token_id": "crash", "forced_eos_token_id": "crash", "no_timestamps_token_id": "crash"}
LIST_KEYS = {"suppress_tokens": "ignored", "begin_suppress_tokens": "ignored"}
NESTED_KEYS = {"bad_words_ids": "crash"}  # a list of id lists
PAIR_KEYS = {"forced_decoder_ids": "crash"}  # [[position, id], ...]
MAP_KEYS = {"lang_to_id": "crash", "task_to_id": "crash"}  # {"<|en|>": id, ...}
WRAPS_WHEN_NEGATIVE = ("forced_bos_token_id", "forced_eos_token_id")  # scores[:, id]: -1 is the last row
GENERATION_KEYS = (*SINGLE_KEYS, *LIST_KEYS, *NESTED_KEYS, *PAIR_KEYS, *MAP_KEYS, "sequence_bias",
                   "alignment_heads")


@dataclass(frozen=True)
class GenerationId:
    """One id ``generate()`` uses: ``key`` is the JSON path (``lang_to_id.<|en|>``, ``bad_words_ids[1]``)."""

    file: str
    key: str
    value: int
    effect: str  # "crash" or "ignored": what an out-of-range value does


@dataclass(frozen=True)
class ShadowedKey:
    """A generation key in config.json that ``generate()`` never reads (generation_config.json wins)."""

    key: str
    config_value: Any
    generation_value: Any  # None when generation_config.json lacks the key


@dataclass(frozen=True)
class GenerationIds:
    file: str | None  # the file generate() takes these keys from, None when neither has any
    ids: tuple[GenerationId, ...]
    alignment_heads: tuple[tuple[int, int], ...]
    shadowed: tuple[ShadowedKey, ...]


def _int(path: Path, key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise AuditError(path, f'"{key}" must hold integer token ids, not {value!r}'[:300])
    return value


def _list(path: Path, key: str, value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise AuditError(path, f'"{key}" must be a list, not {type(value).__name__}')
    return value


def _ids(path: Path, file: str, raw: dict[str, Any]) -> tuple[list[GenerationId], list[tuple[int, int]]]:
    out: list[GenerationId] = []
    for key, effect in SINGLE_KEYS.items():
        value = raw.get(key)
        values = value if isinstance(value, list) else [] if value is None else [value]
        for v in values:
            out.append(GenerationId(file, key, _int(path, key, v), effect))
    for key, effect in LIST_KEYS.items():
        for v in _list(path, key, raw.get(key) or []):
            out.append(GenerationId(file, key, _int(path, key, v), effect))
    for key, effect in NESTED_KEYS.items():
        for i, seq in enumerate(_list(path, key, raw.get(key) or [])):
            for v in _list(path, f"{key}[{i}]", seq):
                out.append(GenerationId(file, f"{key}[{i}]", _int(path, key, v), effect))
    for key, effect in PAIR_KEYS.items():
        for i, pair in enumerate(_list(path, key, raw.get(key) or [])):
            pair = _list(path, f"{key}[{i}]", pair)
            if len(pair) != 2:
                raise AuditError(path, f'"{key}[{i}]" must be a [position, token id] pair, not {pair!r}'[:300])
            if pair[1] is not None:  # Whisper's [1, null]: no forced token there (the language is detected)
                out.append(GenerationId(file, f"{key}[{i}]", _int(path, key, pair[1]), effect))
    for key, effect in MAP_KEYS.items():
        mapping = raw.get(key) or {}
        if not isinstance(mapping, dict):
            raise AuditError(path, f'"{key}" must map names to token ids, not {type(mapping).__name__}')
        for name, v in sorted(mapping.items()):
            out.append(GenerationId(file, f"{key}.{name}", _int(path, f"{key}.{name}", v), effect))
    for key, seq in _sequence_bias(raw.get("sequence_bias")):
        for v in seq:
            out.append(GenerationId(file, key, v, "crash"))
    heads: list[tuple[int, int]] = []
    for i, pair in enumerate(_list(path, "alignment_heads", raw.get("alignment_heads") or [])):
        pair = _list(path, f"alignment_heads[{i}]", pair)
        if len(pair) != 2:
            raise AuditError(path, f'"alignment_heads[{i}]" must be a [layer, head] pair, not {pair!r}'[:300])
        heads.append((_int(path, "alignment_heads", pair[0]), _int(path, "alignment_heads", pair[1])))
    return out, heads


def _sequence_bias(value: Any) -> list[tuple[str, list[int]]]:
    """``sequence_bias`` as a list of ``[[ids...], bias]`` (the form generate() accepts from JSON). The dict form
    that ``GenerationConfig.save_pretrained`` writes (``{"(5, 6)": -1.0}``) makes transformers 5.24's
    ``generate()`` raise ``ValueError`` whatever the ids, so it holds no ids to check here."""
    out: list[tuple[str, list[int]]] = []
    if isinstance(value, list):
        for i, entry in enumerate(value):
            if isinstance(entry, list) and entry and isinstance(entry[0], list):
                out.append((f"sequence_bias[{i}]", [v for v in entry[0] if isinstance(v, int) and not isinstance(v, bool)]))
    return out


def read_generation_ids(config: ConfigFacts, generation: GenerationFacts | None) -> GenerationIds:
    """The ids ``generate()`` will use, from the file it reads them from, and the config.json keys it ignores."""
    if generation is not None:
        ids, heads = _ids(generation.path, "generation_config.json", generation.raw)
        shadowed = tuple(
            ShadowedKey(key, config.raw[key], generation.raw.get(key))
            for key in GENERATION_KEYS
            if config.raw.get(key) not in (None, [], {}) and config.raw.get(key) != generation.raw.get(key)
        )
        return GenerationIds("generation_config.json", tuple(ids), tuple(heads), shadowed)
    ids, heads = _ids(config.path, "config.json", config.raw)
    return GenerationIds("config.json" if ids or heads else None, tuple(ids), tuple(heads), ())
