"""Which token ids the tokenizer emits in normal use, and why (the roles named in findings)."""

from __future__ import annotations

import re

from ..facts.tokenizer import TokenizerFacts

# Roles whose tokens the model reads or must predict in ordinary training and generation.
USED_ROLES = ("bos", "eos", "sep", "cls")
# Placeholder names of tokens reserved for later use: never emitted until someone repurposes them.
RESERVED_RE = re.compile(r"reserved|unused|placeholder|extra_id|^<unk_?\d+>$|^<\|?dummy", re.IGNORECASE)


def template_tokens(tok: TokenizerFacts) -> dict[int, str]:
    """id -> content of every single-token string the chat template contains."""
    template = tok.chat_template or ""
    if not template:
        return {}
    out: dict[int, str] = {}
    present = contained({a.content for a in tok.added_tokens if a.content}, template)
    for added in tok.added_tokens:
        if added.content in present:
            out[added.id] = added.content
    for text, ids in tok.template_markers:
        if len(ids) == 1:
            out[ids[0]] = text
    return out


WINDOW_GROUP = 64  # contents of one length from which one pass over the text's windows beats str.find each


def contained(contents: set[str], text: str) -> set[str]:
    """The ``contents`` that occur in ``text`` (``c in text`` for each), without the cost of one scan of
    ``text`` per content: 40,000 added tokens against a 4 MB template took 225 s that way. Contents of
    a length shared by many are found in one pass over the text's windows of that length."""
    by_length: dict[int, set[str]] = {}
    for c in contents:
        if len(c) <= len(text):
            by_length.setdefault(len(c), set()).add(c)
    found: set[str] = set()
    for length, group in by_length.items():
        if len(group) < WINDOW_GROUP:
            found.update(c for c in group if c in text)
            continue
        for i in range(len(text) - length + 1):
            window = text[i : i + length]
            if window in group:
                found.add(window)
                if len(found) == len(contents):
                    return found
    return found


def token_roles(tok: TokenizerFacts) -> dict[int, list[str]]:
    """id -> roles for every token with one: bos/eos/... , "chat template", "added", "reserved"."""
    roles: dict[int, list[str]] = {}
    for role, (_content, token_id) in sorted(tok.special_tokens.items()):
        if token_id is not None:
            roles.setdefault(token_id, []).append(role)
    for token_id in template_tokens(tok):
        roles.setdefault(token_id, []).append("chat template")
    for _content, token_id in tok.extra_special_tokens:
        if token_id is not None and "extra special" not in roles.get(token_id, []):
            roles.setdefault(token_id, []).append("extra special")
    for added in tok.added_tokens:
        tags = roles.setdefault(added.id, [])
        tags.append("reserved" if RESERVED_RE.search(added.content) else "added")
    return roles


def in_normal_use(roles: list[str]) -> bool:
    """True for tokens the tokenizer or template emits: bos/eos/sep/cls, chat-template and added tokens.

    pad (zero by design: ``padding_idx`` rows are never updated and pad positions are masked), unk and
    mask alone do not count, nor do reserved placeholders.
    """
    if any(r in USED_ROLES or r == "chat template" for r in roles):
        return True
    named = {"pad", "unk", "mask"}
    return ("added" in roles or "extra special" in roles) and not (named & set(roles)) and "reserved" not in roles
