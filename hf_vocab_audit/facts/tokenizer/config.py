"""A tokenizer folder's JSON files as transformers reads them: ``tokenizer_config.json``,
``special_tokens_map.json`` and the chat template (``chat_template.jinja`` first)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ...errors import AuditError
from ...io.jsonfile import check_inside, read_bytes, read_json_object
from . import ROLES
from .added_tokens import token_content


def special_strings(config: dict[str, Any]) -> tuple[dict[str, str], list[str]]:
    """(role -> content of the named special tokens, the extra special tokens in order, deduplicated)."""
    named: dict[str, str] = {}
    for role in ROLES:
        content = token_content(config.get(f"{role}_token"))
        if content is not None:
            named[role] = content
    extra: dict[str, None] = {}  # ordered and deduplicated in linear time
    for key in ("extra_special_tokens", "additional_special_tokens"):
        value = config.get(key)
        values = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
        for item in values:
            content = token_content(item)
            if content is not None:
                extra.setdefault(content)
    return named, list(extra)


def find_chat_template(folder: Path, config: dict[str, Any]) -> tuple[str | None, str | None]:
    """(template, the file it came from), or (None, None)."""
    jinja = folder / "chat_template.jinja"
    if jinja.is_file():
        check_inside(jinja, folder)
        try:
            return read_bytes(jinja, 16 * 1024 * 1024).decode("utf-8"), jinja.name
        except UnicodeDecodeError:
            raise AuditError(jinja, "is not valid UTF-8") from None
    template = config.get("chat_template")
    if isinstance(template, list):  # [{"name": "default", "template": "..."}, ...]
        named = {t.get("name"): t.get("template") for t in template if isinstance(t, dict)}
        template = named.get("default") or next(iter(named.values()), None)
    if isinstance(template, str):
        return template, "tokenizer_config.json"
    return None, None


def read_config(folder: Path, name: str) -> dict[str, Any]:
    """The JSON object in ``folder/name`` ({} when absent), refused when the Rust library could not take it."""
    path = folder / name
    if not path.exists():
        return {}
    check_inside(path, folder)
    data = read_json_object(path)
    try:  # the tokenizers library (Rust) rejects lone surrogates such as "\ud800" that JSON allows
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise AuditError(path, f"holds a string that is not valid Unicode ({exc.object[exc.start]!r})") from None
    return data
