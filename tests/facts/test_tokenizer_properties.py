"""Properties of the tokenizer reader, on generated tokenizer files (hypothesis).

Generated tokenizer.json / tokenizer_config.json (odd token strings, clashing added tokens, junk where
objects belong) give consistent facts or one AuditError line naming a file of the folder, never another
exception.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from malformed import TOKENIZER_CONFIG, tokenizer_json

from hf_vocab_audit.errors import AuditError
from hf_vocab_audit.facts.tokenizer.folder import load_tokenizer

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
token_text = st.text(min_size=1, max_size=6) | st.sampled_from(["<s>", "</s>", "<pad>", "<|im_end|>", " ", "\u2581a"])
junk = st.none() | st.booleans() | st.integers(-5, 2**40) | st.text(max_size=4) | st.lists(st.integers(), max_size=2)
special_value = token_text | st.fixed_dictionaries({"content": token_text, "special": st.booleans()}) | junk


@st.composite
def tokenizer_folders(draw):
    vocab = draw(st.lists(token_text, min_size=1, max_size=12, unique=True))
    tok = tokenizer_json(["<unk>", *[v for v in vocab if v != "<unk>"]])
    tok["added_tokens"] = [
        {"id": draw(st.integers(0, 20)), "content": draw(token_text), "single_word": False, "lstrip": False,
         "rstrip": False, "normalized": draw(st.booleans()), "special": draw(st.booleans())}
        for _ in range(draw(st.integers(0, 4)))
    ]
    config = dict(TOKENIZER_CONFIG)
    for key in draw(st.lists(st.sampled_from(["bos_token", "eos_token", "pad_token", "unk_token", "mask_token"]),
                             unique=True, max_size=4)):
        config[key] = draw(special_value)
    if draw(st.booleans()):
        config["added_tokens_decoder"] = draw(st.dictionaries(
            st.integers(-2, 30).map(str) | st.text(max_size=3),
            st.fixed_dictionaries({"content": token_text, "special": st.booleans()}) | junk, max_size=4))
    if draw(st.booleans()):
        config["extra_special_tokens"] = draw(st.lists(special_value, max_size=3) | junk)
    if draw(st.booleans()):
        config["model_max_length"] = draw(junk | st.integers(1, 10**31) | st.floats(allow_nan=False))
    if draw(st.booleans()):
        config["chat_template"] = draw(st.text(max_size=30) | junk | st.lists(
            st.fixed_dictionaries({"name": st.text(max_size=3), "template": st.text(max_size=10)}), max_size=2))
    if draw(st.booleans()):
        config["model_input_names"] = draw(st.lists(st.sampled_from(["input_ids", "token_type_ids"]), max_size=2)
                                           | junk)
    return tok, config


def _load(tok: dict, config: dict):
    folder = Path(tempfile.mkdtemp(prefix="tok-props-"))
    try:
        (folder / "tokenizer.json").write_text(json.dumps(tok))
        (folder / "tokenizer_config.json").write_text(json.dumps(config))
        try:
            return load_tokenizer(folder, "llama")
        except AuditError as exc:
            text = str(exc)
            assert "\n" not in text and text.startswith(str(folder)), text
            return exc
    finally:
        shutil.rmtree(folder)


@SETTINGS
@given(tokenizer_folders())
def test_generated_tokenizers_give_consistent_facts_or_one_line_error(files):
    facts = _load(*files)
    if isinstance(facts, AuditError):
        return
    assert list(facts.ids) == sorted(set(facts.ids))
    assert facts.max_id == (facts.ids[-1] if facts.ids else -1)
    assert facts.length >= 1
    for _role, (content, token_id) in facts.special_tokens.items():
        if token_id is not None:
            assert facts.id_to_token(token_id) == content
    assert facts.model_max_length is None or (type(facts.model_max_length) is int and facts.model_max_length > 0)


paths = st.lists(st.sampled_from(["model", "vocab", "added_tokens", "pre_tokenizer", "type", "unk_token", "0"]),
                 min_size=1, max_size=3)


@SETTINGS
@given(tokenizer_folders(), paths, junk)
def test_junk_anywhere_in_tokenizer_json_is_handled(files, path, value):
    tok, config = files
    node = tok
    for key in path[:-1]:
        nxt = node.get(key) if isinstance(node, dict) else None
        if not isinstance(nxt, dict):
            break
        node = nxt
    if isinstance(node, dict):
        node[path[-1]] = value
    _load(tok, config)
