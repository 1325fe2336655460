"""``facts.llama_cpp_eog``'s lookups over a GGUF's token list are the plain walk's (a text listed twice: its first
id), on lists with duplicates, empty texts and types shorter than the tokens."""

from __future__ import annotations

import random

from hf_vocab_audit.facts.llama_cpp_eog import EOG_TEXTS, first_ids, whole_tokens


def _walk(tokens: list[str], types: list[int] | None) -> dict[str, int]:
    out: dict[str, int] = {}
    for i, text in enumerate(tokens):
        kind = types[i] if types is not None and i < len(types) else 1
        if text and (kind in (2, 3, 4) or text in EOG_TEXTS):
            out.setdefault(text, i)
    return out


def test_lookups_equal_the_walk() -> None:
    rng = random.Random(0)
    pool = ["", "a", "b", "<x>", "<y>", *sorted(EOG_TEXTS)[:6]]
    for _ in range(300):
        tokens = [rng.choice(pool) for _ in range(rng.randint(0, 30))]
        types = None if rng.random() < 0.2 else [rng.choice((1, 2, 3, 4, 5, 6)) for _ in range(rng.randint(0, 35))]
        ids = first_ids(tokens)
        assert ids == {t: tokens.index(t) for t in tokens}
        assert whole_tokens(tokens, types, ids) == whole_tokens(tokens, types) == _walk(tokens, types)
