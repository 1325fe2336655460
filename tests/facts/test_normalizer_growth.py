"""A normalizer chain's worst-case growth, decided from its JSON before the tokenizers library runs it: the
growth it claims is what the library really does, the real chains pass, and the expanding ones are refused
in one line naming the file."""

from __future__ import annotations

import base64
import json
import struct
from pathlib import Path
from typing import Any

import pytest
from malformed import tokenizer_json
from tokenizers import Tokenizer

from hf_vocab_audit.errors import AuditError
from hf_vocab_audit.facts.tokenizer.bounded_calls import check_charsmap_blob
from hf_vocab_audit.facts.tokenizer.normalizer_growth import (
    MAX_GROWTH,
    check_backend_growth,
    check_normalizer_growth,
    growth_of,
)

DOUBLE = {"type": "Replace", "pattern": {"String": "a"}, "content": "aa"}


def _seq(*items: dict[str, Any]) -> dict[str, Any]:
    return {"type": "Sequence", "normalizers": list(items)}


def _raw(normalizer: dict[str, Any] | None) -> bytes:
    return json.dumps(tokenizer_json() | {"normalizer": normalizer}).encode()


@pytest.mark.parametrize("spec", [
    _seq(DOUBLE, DOUBLE, DOUBLE),
    _seq({"type": "Prepend", "prepend": "xy"}, {"type": "Replace", "pattern": {"String": "ab"}, "content": "abcde"}),
    _seq(_seq(DOUBLE, {"type": "Lowercase"}), {"type": "Replace", "pattern": {"Regex": "b+"}, "content": "ccc"}),
    {"type": "NFKC"},
])
def test_the_bound_holds_for_what_the_library_does(spec: dict[str, Any]):
    backend = Tokenizer.from_str(json.dumps(tokenizer_json() | {"normalizer": spec}))
    growth = growth_of(spec)
    for text in ("a" * 50, "ab" * 30, "b" * 40, "\ufdfa" * 10, "x"):
        out = backend.normalizer.normalize_str(text)
        assert len(out) <= growth.factor * len(text) + growth.added


def test_doublings_compound_through_sequences():
    assert growth_of(_seq(*[DOUBLE] * 10)).factor == 1024
    assert growth_of(_seq(_seq(DOUBLE, DOUBLE), _seq(DOUBLE))).factor == 8
    assert growth_of({"type": "Prepend", "prepend": "abc"}).added == 3
    assert growth_of(_seq({"type": "Prepend", "prepend": "ab"}, DOUBLE)).added == 4  # the prefix is doubled too


@pytest.mark.parametrize("spec", [
    None,
    _seq({"type": "Prepend", "prepend": "\u2581"}, {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}),
    {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True, "strip_accents": None, "lowercase": True},
    _seq({"type": "NFKC"}, {"type": "Lowercase"}),
    _seq({"type": "NFD"}, {"type": "Lowercase"}, {"type": "StripAccents"}),
    _seq({"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}, {"type": "NFKC"}),
    _seq(*[DOUBLE] * 6),
])
def test_real_chains_pass(spec: dict[str, Any] | None, tmp_path):
    check_normalizer_growth(_raw(spec), tmp_path / "tokenizer.json")
    assert spec is None or growth_of(spec).factor <= MAX_GROWTH


@pytest.mark.parametrize(("spec", "says"), [
    (_seq(*[DOUBLE] * 30), "1,073,741,824-fold (Replace('a', 2-character content))"),
    (_seq(*[DOUBLE] * 7), "128-fold"),
    ({"type": "Replace", "pattern": {"Regex": ""}, "content": "a" * 100}, "101-fold (Replace(regex))"),
    ({"type": "Prepend", "prepend": "a" * 2_000_000}, "by 2,000,000 characters (Prepend)"),
    (_seq({"type": "NFKC"}, {"type": "BertNormalizer"}, {"type": "NFKD"}), "NFKC, BertNormalizer, NFKD"),
])
def test_expanding_chains_are_refused_naming_the_file(spec: dict[str, Any], says: str, tmp_path):
    with pytest.raises(AuditError, match="tokenizer.json: normalizer can grow a text") as err:
        check_normalizer_growth(_raw(spec), tmp_path / "tokenizer.json")
    assert says in str(err.value)


def test_a_token_named_normalizer_is_not_taken_for_one(tmp_path):
    data = tokenizer_json(["<unk>", "<s>", "</s>", "<pad>", "normalizer", "b", "c", "d"])
    data["normalizer"] = _seq(*[DOUBLE] * 30)
    raw = json.dumps(data).encode()
    assert b'"normalizer": 4' in raw
    with pytest.raises(AuditError, match="fold"):
        check_normalizer_growth(raw, tmp_path / "tokenizer.json")
    check_normalizer_growth(json.dumps(data | {"normalizer": None}).encode(), tmp_path / "tokenizer.json")


def test_a_loaded_backend_is_checked_through_its_own_serialisation(tmp_path):
    backend = Tokenizer.from_str(json.dumps(tokenizer_json() | {"normalizer": _seq(*[DOUBLE] * 8)}))
    with pytest.raises(AuditError, match="256-fold"):
        check_backend_growth(backend, tmp_path / "tokenizer.json")
    check_backend_growth(Tokenizer.from_str(json.dumps(tokenizer_json())), tmp_path / "tokenizer.json")


def _charsmap(replacement: str) -> bytes:
    """A blob of an empty trie followed by one normalized string: the part the growth is read from."""
    return struct.pack("<I", 4) + bytes(4) + replacement.encode() + b"\0"


def test_a_charsmap_replacement_is_its_growth(tmp_path):
    assert growth_of({"type": "Precompiled", "precompiled_charsmap": base64.b64encode(_charsmap("x" * 18)).decode()}).factor == 18
    check_charsmap_blob(_charsmap("x" * 18), Path("spiece.model"))
    with pytest.raises(AuditError, match="spiece.model: precompiled_charsmap can grow a text 1,000-fold"):
        check_charsmap_blob(_charsmap("x" * 1000), Path("spiece.model"))


@pytest.mark.parametrize("rule", ["nmt_nfkc", "nfkc_cf"])
def test_a_trained_sentencepiece_charsmap_is_18_fold_and_passes(rule: str, tmp_path):
    """sentencepiece's own NFKC tables: U+FDFA becomes 18 characters, NFKC's bound; T5's converted chain
    (the charsmap, then Replace(" {2,}", " ")) is 36-fold, under the bound."""
    spm = pytest.importorskip("sentencepiece")
    from sentencepiece import sentencepiece_model_pb2 as pb

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("hello world this is a test of sentencepiece training\n" * 50, encoding="utf-8")
    model = tmp_path / "m"
    spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(model), vocab_size=20,
                                   normalization_rule_name=rule, minloglevel=3)
    proto = pb.ModelProto()
    proto.ParseFromString((tmp_path / "m.model").read_bytes())
    blob = proto.normalizer_spec.precompiled_charsmap
    charsmap = {"type": "Precompiled", "precompiled_charsmap": base64.b64encode(blob).decode()}
    assert growth_of(charsmap).factor == 18
    check_charsmap_blob(blob, tmp_path / "spiece.model")
    t5 = _seq(charsmap, {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "})
    check_normalizer_growth(_raw(t5), tmp_path / "tokenizer.json")
    assert growth_of(t5).factor == 36


def test_a_normalizer_longer_than_the_first_window_is_read_whole(tmp_path):
    """The object is decoded through a window that grows (a charsmap is ~300 KB): the doublings after a
    300,000-character Prepend are still seen."""
    spec = _seq({"type": "Prepend", "prepend": "\u00e9" * 300_000}, *[DOUBLE] * 7)
    with pytest.raises(AuditError, match="128-fold"):
        check_normalizer_growth(_raw(spec), tmp_path / "tokenizer.json")
    check_normalizer_growth(_raw(_seq({"type": "Prepend", "prepend": "\u00e9" * 300_000})), tmp_path / "tokenizer.json")
