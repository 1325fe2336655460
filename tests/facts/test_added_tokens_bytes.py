"""facts.added_tokens: the section read from the file's bytes (a window decoded, grown as needed) is the one
read from the decoded text, whatever the window cuts (multi-byte characters, escapes, a nested key first)."""

from __future__ import annotations

import json
import random

import pytest

from hf_vocab_audit.facts.tokenizer import added_tokens


@pytest.mark.parametrize("window", [1, 7, 16, 1 << 16])
def test_bytes_and_text_give_the_same_section(monkeypatch, window: int) -> None:
    monkeypatch.setattr(added_tokens, "SECTION_WINDOW", window)
    rng = random.Random(window)
    contents = ["<a>", "é", "日本語", '\\"q', "x" * 40, "𝄞", "]", "\"added_tokens\": [1]"]
    for case in range(150):
        entries = [{"id": rng.randint(0, 99), "content": rng.choice(contents), "special": True}
                   for _ in range(rng.randint(0, 20))]
        text = json.dumps({"version": "1.0", "added_tokens": entries, "model": {"vocab": {"é": 0}}},
                          ensure_ascii=rng.random() < 0.3, indent=rng.choice([None, 2]))
        if case % 5 == 0:
            text = '{"normalizer": {"added_tokens": 5}, ' + text[1:]  # a nested key of that name first
        if case % 7 == 0:
            text = text[: len(text) // 2]  # cut: no whole list
        assert added_tokens.added_tokens_section(text.encode("utf-8")) == added_tokens.added_tokens_section(text)


def test_a_long_list_is_read_whole(monkeypatch) -> None:
    monkeypatch.setattr(added_tokens, "SECTION_WINDOW", 64)
    entries = [{"id": i, "content": f"<|reserved_special_token_{i}|>é", "special": True} for i in range(500)]
    raw = json.dumps({"added_tokens": entries, "model": {}}, ensure_ascii=False).encode("utf-8")
    assert added_tokens.added_tokens_section(raw) == entries
