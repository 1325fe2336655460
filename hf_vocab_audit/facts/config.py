"""Facts from ``config.json`` and ``generation_config.json``: typed, validated, never executed."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import AuditError
from ..io.jsonfile import check_inside, decimal_int, read_json_object

SPECIAL_ID_KEYS = ("bos_token_id", "eos_token_id", "pad_token_id", "decoder_start_token_id")
TEXT_CONFIG_KEYS = ("text_config", "decoder", "generator")


def _int(path: Path, key: str, value: Any, *, minimum: int | None = 0) -> int | None:
    """An optional integer field (null: unset)."""
    return None if value is None else _present_int(path, key, value, minimum=minimum)


def _present_int(path: Path, key: str, value: Any, *, minimum: int | None = 0) -> int:
    """An integer field that must hold a number (null refused, like any other non-integer)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise AuditError(path, f'"{key}" must be an integer, not {type(value).__name__} {value!r}'[:300])
    if minimum is not None and value < minimum:
        raise AuditError(path, f'"{key}" must be >= {minimum}, not {value}')
    return value


def _ids(path: Path, key: str, value: Any) -> tuple[int, ...] | None:
    """A token id field: an int, a list of ints, or null. Negative ids are kept (rules report them)."""
    if value is None:
        return None
    if isinstance(value, list):
        if not value:
            return None
        if any(v is None for v in value):
            raise AuditError(path, f'"{key}" must be an integer or a list of integers, not {value!r}'[:300])
        return tuple(_present_int(path, key, v, minimum=None) for v in value)
    return (_present_int(path, key, value, minimum=None),)


@dataclass(frozen=True)
class SpecialIds:
    """Special-token ids a config declares: ``{"eos_token_id": (2,), ...}`` with the JSON key each came from."""

    ids: dict[str, tuple[int, ...]] = field(default_factory=dict)
    keys: dict[str, str] = field(default_factory=dict)  # "eos_token_id" -> "text_config.eos_token_id"


def _special_ids(path: Path, *sections: tuple[str, dict[str, Any]]) -> SpecialIds:
    ids: dict[str, tuple[int, ...]] = {}
    keys: dict[str, str] = {}
    for prefix, section in sections:
        for key in SPECIAL_ID_KEYS:
            if key in ids or key not in section:
                continue
            value = _ids(path, prefix + key, section[key])
            if value is not None:
                ids[key] = value
                keys[key] = prefix + key
    return SpecialIds(ids, keys)


@dataclass(frozen=True)
class ConfigFacts:
    """What the rules need from ``config.json``; ``text_prefix`` is where the text model's keys live."""

    path: Path
    raw: dict[str, Any]
    model_type: str | None
    architectures: tuple[str, ...]
    text_prefix: str  # "" or "text_config."
    vocab_size: int | None
    tie_word_embeddings: bool | None
    max_position_embeddings: int | None
    type_vocab_size: int | None
    position_embedding_type: str | None
    has_rotary: bool
    special: SpecialIds
    num_labels: int | None
    id2label: dict[int, str] | None
    label2id: dict[str, int] | None
    auto_map: dict[str, Any] | None
    is_encoder_decoder: bool

    @property
    def text(self) -> dict[str, Any]:
        return self.raw[self.text_prefix[:-1]] if self.text_prefix else self.raw


def _text_section(raw: dict[str, Any], path: Path) -> tuple[str, dict[str, Any]]:
    for key in TEXT_CONFIG_KEYS:
        section = raw.get(key)
        if isinstance(section, dict) and ("vocab_size" in section or "model_type" in section):
            if "vocab_size" in raw and key != "text_config":
                continue  # an encoder-decoder whose top level already describes the text model
            return key + ".", section
        if section is not None and key == "text_config" and not isinstance(section, dict):
            raise AuditError(path, f'"{key}" must be an object, not {type(section).__name__}')
    return "", raw


def load_config(path: Path) -> ConfigFacts:
    check_inside(path, path.parent)
    return parse_config(read_json_object(path), path)


def parse_config(raw: dict[str, Any], path: Path) -> ConfigFacts:
    """Config facts from ``config.json``'s object (read from the file, or a live config's JSON form)."""
    prefix, text = _text_section(raw, path)

    def get(key: str) -> Any:
        return text.get(key, raw.get(key)) if prefix else raw.get(key)

    architectures = raw.get("architectures") or ()
    if not isinstance(architectures, list) or not all(isinstance(a, str) for a in architectures):
        if architectures:
            raise AuditError(path, '"architectures" must be a list of strings')
        architectures = []
    tie = get("tie_word_embeddings")
    if tie is not None and not isinstance(tie, bool):
        raise AuditError(path, f'"{prefix}tie_word_embeddings" must be true or false, not {tie!r}'[:200])
    model_type = raw.get("model_type")
    if model_type is not None and not isinstance(model_type, str):
        raise AuditError(path, '"model_type" must be a string')

    id2label = raw.get("id2label")
    parsed_id2label: dict[int, str] | None = None
    if id2label is not None:
        if not isinstance(id2label, dict):
            raise AuditError(path, '"id2label" must be an object')
        parsed_id2label = {}
        for k, v in id2label.items():
            try:
                parsed_id2label[int(k)] = str(v)
            except ValueError:
                raise AuditError(path, f'"id2label" key {k!r} is not an integer') from None
    label2id = raw.get("label2id")
    parsed_label2id: dict[str, int] | None = None
    if label2id is not None:
        if not isinstance(label2id, dict):
            raise AuditError(path, '"label2id" must be an object')
        parsed_label2id = {}
        for k, v in label2id.items():
            if isinstance(v, str) and decimal_int(v) is not None:
                v = decimal_int(v)
            parsed_label2id[str(k)] = _present_int(path, f"label2id.{k}", v, minimum=None)
    num_labels = _int(path, "num_labels", raw.get("num_labels"), minimum=1)

    pos_type = get("position_embedding_type")
    rotary = any(k in text for k in ("rope_theta", "rope_scaling", "rotary_dim", "rotary_pct", "rope_parameters"))
    auto_map = raw.get("auto_map")
    return ConfigFacts(
        path=path,
        raw=raw,
        model_type=model_type,
        architectures=tuple(architectures),
        text_prefix=prefix,
        vocab_size=_int(path, prefix + "vocab_size", get("vocab_size"), minimum=1),
        tie_word_embeddings=tie,
        max_position_embeddings=_int(
            path, prefix + "max_position_embeddings", get("max_position_embeddings") or get("n_positions"), minimum=1
        ),
        type_vocab_size=_int(path, prefix + "type_vocab_size", get("type_vocab_size"), minimum=0),
        position_embedding_type=pos_type if isinstance(pos_type, str) else None,
        has_rotary=rotary,
        special=_special_ids(path, (prefix, text), ("", raw)) if prefix else _special_ids(path, ("", raw)),
        num_labels=num_labels,
        id2label=parsed_id2label,
        label2id=parsed_label2id,
        auto_map=auto_map if isinstance(auto_map, dict) else None,
        is_encoder_decoder=bool(raw.get("is_encoder_decoder", False)),
    )


@dataclass(frozen=True)
class GenerationFacts:
    path: Path
    special: SpecialIds
    raw: dict[str, Any] = field(default_factory=dict)


def load_generation_config(path: Path) -> GenerationFacts:
    check_inside(path, path.parent)
    return parse_generation_config(read_json_object(path), path)


def parse_generation_config(raw: dict[str, Any], path: Path) -> GenerationFacts:
    return GenerationFacts(path=path, special=_special_ids(path, ("", raw)), raw=raw)
