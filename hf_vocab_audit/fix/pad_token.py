"""Choosing a pad token for ``--fix --unsafe-fixes``: an unused special token, else a new one."""

from __future__ import annotations

import json
from typing import Any

from ..facts import Facts

# Never-emitted tokens that may serve as pad, best first (matched on the lower-cased token text).
PAD_NAMES = ("pad",)
RESERVED_NAMES = ("reserved", "unused")
NEW_PAD_CANDIDATES = ("<pad>", "<|pad|>", "[PAD]")


def pad_candidate(facts: Facts) -> tuple[str, int] | None:
    """An existing special token no one uses that can serve as pad: a 'pad' name first, then 'reserved'."""
    tok = facts.tokenizer
    assert tok is not None
    taken = {content for content, _ in tok.special_tokens.values()}  # bos, eos, unk...: in use
    template = tok.chat_template or ""
    rows = facts.input_rows
    for names in (PAD_NAMES, RESERVED_NAMES):
        found = [
            (t.id, t.content)
            for t in tok.added_tokens
            if t.special and t.content not in taken and t.content not in template
            and any(n in t.content.lower() for n in names)
        ]
        if names is PAD_NAMES:
            for content in NEW_PAD_CANDIDATES:
                token_id = tok.backend.token_to_id(content)
                if token_id is not None and content not in taken:
                    found.append((token_id, content))
        if found:
            inside = [c for c in found if rows is None or c[0] < rows]
            token_id, content = min(inside or found)
            return content, token_id
    return None


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
