"""Added tokens as declared by a tokenizer's files, and the conflicts between those declarations
(``tokenizer.json``'s ``added_tokens`` against ``tokenizer_config.json``'s ``added_tokens_decoder``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import AuditError
from ...io.jsonfile import short_integers

MAX_TOKEN_ID = 2**32  # the tokenizers library stores ids as u32


def token_content(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return value["content"]
    return None


@dataclass(frozen=True)
class AddedTokenInfo:
    id: int
    content: str
    special: bool


@dataclass(frozen=True)
class AddedTokenConflict:
    """Two declarations that disagree: one content at two ids, or one id with two contents."""

    file: str
    description: str
    ids: tuple[int, ...]
    contents: tuple[str, ...]


def added_contents(backend: Any) -> set[str]:
    return {t.content for t in backend.get_added_tokens_decoder().values()}


def added_tokens_decoder(path: Path, config: dict[str, Any]) -> dict[int, tuple[str, bool]]:
    raw = config.get("added_tokens_decoder")
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise AuditError(path, '"added_tokens_decoder" must be an object')
    out: dict[int, tuple[str, bool]] = {}
    for key, value in raw.items():
        content = token_content(value)
        try:
            token_id = int(key)
        except ValueError:
            raise AuditError(path, f'"added_tokens_decoder" key {key[:100]!r} is not an integer id') from None
        if not 0 <= token_id < MAX_TOKEN_ID:
            raise AuditError(path, f'"added_tokens_decoder" id {key[:100]} is outside 0..{MAX_TOKEN_ID - 1}')
        if content is None:
            raise AuditError(path, f'"added_tokens_decoder" entry {key!r} has no "content" string')
        out[token_id] = (content, bool(value.get("special", False)) if isinstance(value, dict) else False)
    return out


def added_tokens_section(text: str | bytes) -> list[object]:
    """tokenizer.json's top-level ``added_tokens`` list, parsed alone (the vocabulary is not parsed) from the
    text the library was given: no second copy of a file that is megabytes long. Given the file's bytes, only
    a window after the key is decoded, grown until the list is whole (the same list as decoding all of it)."""

    if isinstance(text, bytes):
        return _section_of_bytes(text)
    needle = '"added_tokens"'
    start = 0
    while (at := text.find(needle, start)) != -1:
        start = at + len(needle)
        if text[at - 1 : at] == "\\":
            continue
        colon = text.find(":", start)
        if colon == -1 or text[start:colon].strip():
            continue
        value_at = colon + 1
        while text[value_at : value_at + 1] in (" ", "\t", "\n", "\r"):  # JSON's whitespace
            value_at += 1
        try:
            with short_integers():
                value, _ = json.JSONDecoder().raw_decode(text, value_at)
        except (ValueError, RecursionError):
            return []
        return value if isinstance(value, list) else []
    return []


SECTION_WINDOW = 1 << 16  # bytes decoded first after the key; doubled while the list runs past the window


def _section_of_bytes(raw: bytes) -> list[object]:
    """``added_tokens_section`` of the UTF-8 bytes of tokenizer.json (the needle and JSON's punctuation are
    ASCII, so byte positions find the same key as character positions)."""
    needle = b'"added_tokens"'
    start = 0
    while (at := raw.find(needle, start)) != -1:
        start = at + len(needle)
        if raw[at - 1 : at] == b"\\":
            continue
        colon = raw.find(b":", start)
        if colon == -1 or raw[start:colon].decode("utf-8", "replace").strip():
            continue
        value_at = colon + 1
        while raw[value_at : value_at + 1] in (b" ", b"\t", b"\n", b"\r"):
            value_at += 1
        window = SECTION_WINDOW
        while True:
            stop = min(len(raw), value_at + window)
            chunk = raw[value_at:stop]
            try:
                piece = chunk.decode("utf-8")
            except UnicodeDecodeError as exc:
                if stop == len(raw) or exc.start < len(chunk) - 3:
                    return []  # not UTF-8 (the library refuses such a file before this is asked)
                piece = chunk[: exc.start].decode("utf-8", "replace")  # a character cut by the window
            try:
                with short_integers():
                    value, _ = json.JSONDecoder().raw_decode(piece)
            except RecursionError:
                return []
            except ValueError:
                if stop == len(raw):
                    return []
                window *= 2  # the list runs past the window: grow (a list is whole only at its "]")
                continue
            return value if isinstance(value, list) else []
    return []


def tokenizer_json_conflicts(text: str | bytes, backend: Any) -> list[AddedTokenConflict]:
    """Duplicates inside tokenizer.json's own ``added_tokens`` list (the library keeps only one)."""
    by_id: dict[int, set[str]] = {}
    by_content: dict[str, set[int]] = {}
    for entry in added_tokens_section(text):
        if isinstance(entry, dict) and isinstance(entry.get("id"), int) and isinstance(entry.get("content"), str):
            by_id.setdefault(entry["id"], set()).add(entry["content"])
            by_content.setdefault(entry["content"], set()).add(entry["id"])
    for content, ids in by_content.items():
        base = backend.model.token_to_id(content)
        if base is not None and any(i != base for i in ids):
            ids.add(base)
    out = []
    for token_id, contents in sorted(by_id.items()):
        if len(contents) > 1:
            out.append(
                AddedTokenConflict(
                    "tokenizer.json",
                    f"added_tokens gives id {token_id} to {len(contents)} tokens: {sorted(contents)}",
                    (token_id,),
                    tuple(sorted(contents)),
                )
            )
    for content, ids in sorted(by_content.items()):
        if len(ids) > 1:
            out.append(
                AddedTokenConflict(
                    "tokenizer.json",
                    f"{content!r} is declared at {len(ids)} ids: {sorted(ids)}",
                    tuple(sorted(ids)),
                    (content,),
                )
            )
    return out
