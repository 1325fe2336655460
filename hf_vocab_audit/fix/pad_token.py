"""A new pad token for ``--fix --unsafe-fixes`` when no unused special token can serve (``facts.pad_candidate``)."""

from __future__ import annotations

import json
from typing import Any

from ..facts import Facts
from ..facts.pad_candidate import NEW_PAD_CANDIDATES


def new_pad(facts: Facts) -> tuple[str, int] | str:
    """(content, id) of a new pad token as the tokenizers library would add it, or why it cannot."""
    from tokenizers import AddedToken, Tokenizer

    tok = facts.tokenizer
    assert tok is not None
    path = tok.folder / "tokenizer.json"
    if not path.exists():
        return "the tokenizer has no tokenizer.json to add a <pad> token to"
    content = next((c for c in NEW_PAD_CANDIDATES if tok.backend.token_to_id(c) is None), None)
    if content is None:
        return "no free name for a new pad token"
    from ..facts.tokenizer.bounded_calls import library_call

    with library_call(path, "the tokenizers library cannot add a pad token"):
        backend = Tokenizer.from_str(path.read_text(encoding="utf-8"))
        if backend.get_vocab_size(with_added_tokens=True) != tok.length:
            return "tokenizer_config.json declares tokens tokenizer.json lacks: re-save the tokenizer first"
        backend.add_special_tokens([AddedToken(content, special=True, normalized=False)])
        token_id = backend.token_to_id(content)
    if token_id != tok.max_id + 1:
        return f"the tokenizers library would put {content!r} at id {token_id}, not after the largest id"
    return content, token_id


def tokenizer_config(facts: Facts) -> dict[str, Any]:
    path = facts.required_tokenizer().folder / "tokenizer_config.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
