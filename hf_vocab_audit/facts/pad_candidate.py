"""An existing special token that can serve as pad: what HVA203/HVA204 suggest and ``--fix`` sets.

One chooser for both, so the advice never names a token this tokenizer does not have (a Llama-3.1 name on
a Llama-3.0 vocabulary) and the fix sets the token the advice named.
"""

from __future__ import annotations

from .checkpoint import Facts

# Never-emitted tokens that may serve as pad, best first (matched on the lower-cased token text).
PAD_NAMES = ("pad",)
RESERVED_NAMES = ("reserved", "unused")
NEW_PAD_CANDIDATES = ("<pad>", "<|pad|>", "[PAD]")  # names a new pad token may take


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
