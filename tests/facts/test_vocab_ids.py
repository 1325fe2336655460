"""facts.vocab_ids: the vocabulary's ids proved through the library's own lookups (on two more threads) must be
exactly the values of ``get_vocab(with_added_tokens=True)`` (what the audit used before); where the proof does
not apply, ``get_vocab`` answers (``proved`` False). The backend itself is never changed."""

from __future__ import annotations

import json
import random

import pytest
from tokenizers import AddedToken, Tokenizer, decoders, models

from hf_vocab_audit.facts.tokenizer.folder import load_tokenizer
from hf_vocab_audit.facts.tokenizer.vocab_ids import VocabIds, contiguous_vocab_ids


def _expected(tok: Tokenizer) -> tuple[int, ...]:
    return tuple(sorted(set(tok.get_vocab(with_added_tokens=True).values())))


def _wordlevel(vocab: dict[str, int]) -> Tokenizer:
    return Tokenizer(models.WordLevel(vocab, unk_token=None))


def _with_added(tok: Tokenizer, entries: list[tuple[int, str]]) -> Tokenizer:
    """``tok`` with tokenizer.json ``added_tokens`` at explicit ids, as a file on disk can declare them."""
    data = json.loads(tok.to_str())
    for token_id, content in entries:
        data["added_tokens"].append({"id": token_id, "content": content, "single_word": False, "lstrip": False,
                                     "rstrip": False, "normalized": False, "special": True})
    return Tokenizer.from_str(json.dumps(data))


def test_contiguous_vocabulary_with_added_tokens_takes_the_fast_path() -> None:
    tok = Tokenizer(models.BPE({f"t{i}": i for i in range(50)}, []))
    tok.add_special_tokens([AddedToken("<s>", special=True), AddedToken("</s>", special=True)])
    got = contiguous_vocab_ids(tok)
    assert got is not None
    assert got == _expected(tok) == tuple(range(52))
    assert got.proved


def test_a_hole_in_the_ids_falls_back() -> None:
    tok = _wordlevel({"a": 0, "b": 1, "c": 5})
    got = contiguous_vocab_ids(tok)
    assert got is not None and got == (0, 1, 5) == _expected(tok)  # get_vocab lists them
    assert got.proved is False


def test_two_tokens_at_one_id_fall_back() -> None:
    tok = _wordlevel({"a": 0, "b": 1, "c": 1})
    got = contiguous_vocab_ids(tok)
    assert got is not None and got == (0, 1) == _expected(tok)
    assert got.proved is False


def test_an_added_token_declared_over_a_model_token_agrees() -> None:
    # tokenizer.json declares "t3" at id 9; the library keeps the model's id 3 for it (no id 9).
    tok = _with_added(_wordlevel({f"t{i}": i for i in range(8)}), [(9, "t3")])
    assert contiguous_vocab_ids(tok) == _expected(tok) == tuple(range(8))


def test_an_added_token_inside_the_model_range_is_counted_once() -> None:
    tok = _with_added(_wordlevel({f"t{i}": i for i in range(8)}), [(2, "<x>")])
    assert contiguous_vocab_ids(tok) == _expected(tok)


def test_the_backend_is_not_changed() -> None:
    tok = Tokenizer(models.BPE({ch: i for i, ch in enumerate("abcdĠ")}, []))
    tok.decoder = decoders.ByteLevel()
    before = tok.decode([0, 4, 1], skip_special_tokens=False)
    got = contiguous_vocab_ids(tok)
    assert got is not None and got.proved is None  # pending: the decodes run on their own tokenizers
    assert tok.decode([0, 4, 1], skip_special_tokens=False) == before
    assert got == tuple(range(5)) and got.proved
    assert isinstance(tok.decoder, decoders.ByteLevel)
    assert tok.decode([0, 4, 1], skip_special_tokens=False) == before == "a b"


def test_not_a_tokenizers_backend_falls_back() -> None:
    assert contiguous_vocab_ids(object()) is None


@pytest.mark.parametrize("seed", range(4))
def test_random_vocabularies_agree_with_get_vocab(seed: int) -> None:
    """Holes, duplicate ids, empty tokens, added tokens over model tokens and inside the model's range:
    whenever the fast path answers, it answers get_vocab's ids; on contiguous vocabularies it does answer."""
    rng = random.Random(seed)
    answered = 0
    for _ in range(60):
        n = rng.randint(1, 40)
        ids = rng.sample(range(2 * n), n) if rng.random() < 0.3 else list(range(n))
        vocab = {f"t{k}": i for k, i in enumerate(ids)}
        if rng.random() < 0.1 and n > 2:
            vocab["t0"] = ids[1]
        kind = rng.choice([models.WordLevel, models.BPE])
        tok = Tokenizer(kind(vocab, unk_token=None) if kind is models.WordLevel else kind(vocab, []))
        names = list(vocab) + ["<a>", "<b>"]
        tok.add_tokens([AddedToken(rng.choice(names), special=rng.random() < 0.5) for _ in range(rng.randint(0, 3))])
        if rng.random() < 0.5:
            try:
                tok = _with_added(tok, [(rng.randint(0, n + 4), rng.choice(names)) for _ in range(rng.randint(1, 3))])
            except Exception:  # noqa: BLE001 - a declaration the library refuses: nothing to compare
                continue
        got = contiguous_vocab_ids(tok)
        assert got is not None
        assert got == _expected(tok)
        answered += bool(got.proved)
    assert answered >= 20


def test_folder_facts_hold_get_vocabs_ids(tmp_path) -> None:
    tok = Tokenizer(models.BPE({f"t{i}": i for i in range(30)}, []))
    tok.add_special_tokens([AddedToken("<s>", special=True)])
    tok.save(str(tmp_path / "tokenizer.json"))
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"bos_token": "<s>", "eos_token": "</s>"}))
    facts = load_tokenizer(tmp_path)
    assert facts.ids == _expected(facts.backend) == tuple(range(32))  # </s> added on load, as transformers does
    assert facts.max_id == 31


def test_pending_ids_pickle_as_the_tuple() -> None:
    import pickle

    tok = Tokenizer(models.BPE({f"t{i}": i for i in range(10)}, []))
    got = contiguous_vocab_ids(tok)
    assert pickle.loads(pickle.dumps(got)) == tuple(range(10))


@pytest.mark.parametrize(
    ("vocab", "proved"),
    [
        ({"a": 0, "b b": 1, "c": 2}, True),  # a space inside a token: its space goes, one is put back
        ({"a": 0, " ": 1, "c": 2}, False),  # a token of spaces only is dropped: not proved, get_vocab answers
        ({"a b": 0, "c": 1, "d": 3}, False),  # a space inside a token cannot hide a hole
        ({"a": 0, "b": 1, "c": 2, "\U0010ffff\U0010fffe\U0010ffffx": 3}, False),  # the prefix: no space
        ({"a": 0, "": 1, "c": 2}, False),  # an empty token decodes to nothing
    ],
)
def test_unusual_tokens_never_prove_a_wrong_vocabulary(vocab: dict[str, int], proved: bool) -> None:
    tok = _wordlevel(vocab)
    got = contiguous_vocab_ids(tok)
    assert got is not None
    assert got == _expected(tok)
    assert got.proved is proved


def test_a_unigram_list_that_repeats_a_piece_keeps_every_position() -> None:
    """get_vocab's piece -> id map keeps a repeated piece's last position only and so shows a hole at id 1;
    every position has a token (id_to_token) and len(tokenizer) counts it, so there is no hole to report."""
    tok = Tokenizer(models.Unigram([(p, -1.0) for p in ["<unk>", "a", "b", "a"]], 0, False))
    got = contiguous_vocab_ids(tok)
    assert got is not None and got == (0, 1, 2, 3) and got.proved
    assert [tok.id_to_token(i) for i in got] == ["<unk>", "a", "b", "a"]
    assert tok.get_vocab_size(with_added_tokens=True) == len(got)
    assert _expected(tok) == (0, 2, 3)  # what get_vocab would have said


def test_two_readers_at_once_get_one_answer() -> None:
    import threading

    calls = []

    def slow() -> tuple[int, ...]:
        calls.append(1)
        threading.Event().wait(0.05)
        return (0, 1, 2)

    ids = VocabIds(resolve=slow)
    seen: list[tuple[int, ...]] = []
    readers = [threading.Thread(target=lambda: seen.append(ids.resolved())) for _ in range(4)]
    for r in readers:
        r.start()
    for r in readers:
        r.join()
    assert seen == [(0, 1, 2)] * 4 and calls == [1]
