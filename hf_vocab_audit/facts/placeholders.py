"""Multimodal placeholder ids (``image_token_index``, ``video_token_id``, ``boi_token_index``, ...) from
config.json and the processor's files, and the placeholder strings the processor inserts.

What the architecture does with a placeholder id before the embedding lookup matters: Gemma-3 and
PaliGemma ``...ForConditionalGeneration`` replace an image id >= the text rows with a valid id (0), so
such an id is healthy there but crashes a text-only ``...ForCausalLM``; Llava looks every id up and crashes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import AuditError
from ..io.jsonfile import check_inside, read_json_object
from .config import ConfigFacts

ID_KEYS = {
    "image_token_index": "image", "image_token_id": "image", "video_token_index": "video", "video_token_id": "video",
    "audio_token_index": "audio", "audio_token_id": "audio", "boi_token_index": "boi", "boi_token_id": "boi",
    "eoi_token_index": "eoi", "eoi_token_id": "eoi",
}  # fmt: skip
TOKEN_KEYS = {"image_token": "image", "video_token": "video", "audio_token": "audio", "boi_token": "boi",
              "eoi_token": "eoi"}
# Placeholder strings of known processors, tried in order when no file names the string.
DEFAULT_TOKENS = {
    "image": ("<image>", "<image_soft_token>", "<|image_pad|>", "<|image|>", "<IMG_CONTEXT>"),
    "video": ("<video>", "<|video_pad|>"),
    "audio": ("<audio>", "<audio_soft_token>", "<|AUDIO|>"),
    "boi": ("<start_of_image>",),
    "eoi": ("<end_of_image>",),
}
PROCESSOR_FILES = ("processor_config.json", "preprocessor_config.json", "tokenizer_config.json")
# model_type -> (the class that replaces an out-of-vocabulary image id before the lookup, its text-only class)
REPLACES_OOV_IMAGE_ID = {
    "gemma3": ("Gemma3ForConditionalGeneration", "Gemma3ForCausalLM"),
    "paligemma": ("PaliGemmaForConditionalGeneration", "GemmaForCausalLM"),
}
# processor class -> the tokens its ``__init__`` adds to the tokenizer when the tokenizer lacks them, in the
# order it adds them (transformers' processing_paligemma.py: the image token via add_special_tokens unless
# the tokenizer already has an ``image_token``, then 1024 ``<locXXXX>`` and 128 ``<segXXX>`` via add_tokens).
# They are not in the tokenizer's files, yet every user of ``AutoProcessor`` gets them, at ids
# len(tokenizer), len(tokenizer) + 1, ...: ids past the embedding's rows crash the forward like any other.
LOAD_TIME_TOKENS = {
    "PaliGemmaProcessor": ("<image>", *(f"<loc{i:0>4}>" for i in range(1024)), *(f"<seg{i:0>3}>" for i in range(128))),
}
COUNTED = ("image", "video", "audio")  # placeholders the forward counts against the encoder's features


@dataclass(frozen=True)
class PlaceholderId:
    kind: str  # "image", "video", "audio", "boi", "eoi"
    file: str
    key: str
    value: int


@dataclass(frozen=True)
class PlaceholderToken:
    """A placeholder string a file names (``"image_token": "<image>"``)."""

    kind: str
    file: str
    key: str
    content: str


@dataclass(frozen=True)
class Placeholders:
    ids: tuple[PlaceholderId, ...]
    tokens: tuple[PlaceholderToken, ...]

    def token_for(self, kind: str) -> PlaceholderToken | None:
        return next((t for t in self.tokens if t.kind == kind), None)


def _section(path: Path, raw: dict[str, Any], file: str, prefix: str = "") -> tuple[list[PlaceholderId],
                                                                                      list[PlaceholderToken]]:
    ids: list[PlaceholderId] = []
    tokens: list[PlaceholderToken] = []
    for key, kind in ID_KEYS.items():
        value = raw.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise AuditError(path, f'"{prefix}{key}" must be an integer token id, not {value!r}'[:300])
        ids.append(PlaceholderId(kind, file, prefix + key, value))
    extra = raw.get("extra_special_tokens")
    sources = [raw, extra] if isinstance(extra, dict) else [raw]
    for source in sources:
        for key, kind in TOKEN_KEYS.items():
            value = source.get(key)
            if isinstance(value, dict):
                value = value.get("content")
            if isinstance(value, str) and value:
                try:  # a lone surrogate ("\ud800") is valid JSON; the tokenizer library cannot take it
                    value.encode("utf-8")
                except UnicodeEncodeError as exc:
                    raise AuditError(path, f'"{prefix}{key}" is not valid Unicode ({exc.object[exc.start]!r})') from None
                tokens.append(PlaceholderToken(kind, file, key, value))
    return ids, tokens


def read_placeholders(folder: Path, config: ConfigFacts, tokenizer_folder: Path | None = None) -> Placeholders:
    """Placeholder ids (config.json first, then the processor's files) and strings (processor files first)."""
    ids, tokens = _section(config.path, config.raw, "config.json")
    more_tokens: list[PlaceholderToken] = []
    for name in PROCESSOR_FILES:
        base = tokenizer_folder if name == "tokenizer_config.json" and tokenizer_folder else folder
        path = base / name
        if not path.is_file():
            continue
        check_inside(path, base)
        more_ids, found = _section(path, read_json_object(path), name)
        ids.extend(i for i in more_ids if name != "tokenizer_config.json")
        more_tokens.extend(found)
    return Placeholders(tuple(ids), tuple(more_tokens + tokens))


def replacing_classes(config: ConfigFacts) -> tuple[str, str] | None:
    """(multimodal class, text-only class) when the architecture replaces an OOV image id before the lookup."""
    pair = REPLACES_OOV_IMAGE_ID.get(config.model_type or "")
    if pair is None:
        return None
    return pair if not config.architectures or pair[0] in config.architectures else None


def replaced_image_ids(config: ConfigFacts, rows: int) -> set[int]:
    """Image placeholder ids >= ``rows`` in config.json that the architecture replaces before the lookup."""
    if replacing_classes(config) is None:
        return set()
    ids, _ = _section(config.path, config.raw, "config.json")
    return {p.value for p in ids if p.kind == "image" and p.value >= rows}


@dataclass(frozen=True)
class LoadTimeToken:
    """A token the processor adds to the tokenizer at load time, and the id it gets there."""

    token_id: int
    content: str


def load_time_tokens(processor: str | None, has_token: Callable[[str], bool], length: int,
                     named_image_token: bool) -> tuple[LoadTimeToken, ...]:
    """The tokens ``processor``'s ``__init__`` adds to a tokenizer of ``length`` ids that lacks them, with the
    ids they get (transformers' add_tokens numbers new tokens from ``len(tokenizer)`` in order).
    ``named_image_token``: the tokenizer's files name an ``image_token``, so the processor adds no ``<image>``."""
    added: list[LoadTimeToken] = []
    for index, content in enumerate(LOAD_TIME_TOKENS.get(processor or "", ())):
        if index == 0 and named_image_token:
            continue
        if not has_token(content):
            added.append(LoadTimeToken(length + len(added), content))
    return tuple(added)
