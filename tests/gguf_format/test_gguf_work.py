"""The work a GGUF asks of the audit is bounded by what it declares in all: marker look-ups in its vocabulary,
keys and tensors over every part of a split model. The look-up split gives the ids the regular expression it
replaced gave."""

from __future__ import annotations

import random
import re
import struct
from pathlib import Path

import pytest
from malformed import _gkv, _gs, _gtensor, _gtokens, gguf_bytes

from hf_vocab_audit.errors import AuditError
from hf_vocab_audit.facts.gguf_facts import GGUFFacts
from hf_vocab_audit.facts.llama_cpp_tables import MATCHED_WHOLE
from hf_vocab_audit.facts.sources.gguf import GGUFVocab, read_gguf_facts
from hf_vocab_audit.io.gguf_header import ReadBudget, read_gguf


def _facts(tokens: list[str], types: list[int]) -> GGUFFacts:
    return GGUFFacts(file="m.gguf", files=("m.gguf",), version=3, arch="llama", tokenizer_model="llama", pre=None,
                     tokens=tuple(tokens), token_types=tuple(types), n_scores=None, n_merges=None,
                     special_ids={"unk": 0}, chat_template=None, vocab_size=None, context_length=None,
                     token_embd=None, output=None)


def _regex_encode(gf: GGUFFacts, text: str) -> list[int]:
    """The split this module made before: one regular expression of every whole token, then greedy pieces."""
    ids = dict(zip(gf.tokens, range(gf.n_tokens)))
    whole = sorted({t for t, k in zip(gf.tokens, gf.token_types or ()) if k in MATCHED_WHOLE and t},
                   key=lambda t: (-len(t), t))
    longest = max(map(len, gf.tokens), default=0)

    def pieces(part: str) -> list[int]:
        out, pos = [], 0
        while pos < len(part):
            for length in range(min(longest, len(part) - pos, len(part) - 1 or 1), 0, -1):
                found = ids.get(part[pos : pos + length])
                if found is not None:
                    out.append(found)
                    pos += length
                    break
            else:
                out.append(gf.special_ids.get("unk", -1))
                pos += 1
        return out

    if not whole:
        return pieces(text)
    out: list[int] = []
    for n, part in enumerate(re.split("(" + "|".join(map(re.escape, whole)) + ")", text)):
        if n % 2:
            out.append(ids[part])
        elif part:
            out.extend(pieces(part))
    return out


def test_lookup_split_gives_the_regex_split_ids():
    rng = random.Random(7)
    alphabet = "ab<|>c"
    for _ in range(200):
        tokens = ["<unk>"] + list(dict.fromkeys("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6)))
                                                for _ in range(rng.randint(1, 30))))
        types = [2] + [rng.choice((1, 1, 3, 4, 5)) for _ in tokens[1:]]
        gf = _facts(tokens, types)
        vocab = GGUFVocab(gf)
        texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 25))) for _ in range(10)]
        assert [e.ids for e in vocab.encode_batch(texts)] == [_regex_encode(gf, t) for t in texts], (tokens, types)


def test_a_marker_that_is_one_control_token_costs_one_lookup():
    gf = _facts(["<unk>", "<|im_start|>", "<|im_end|>", "a"], [2, 3, 3, 1])
    vocab = GGUFVocab(gf, max_lookups=2)
    assert [e.ids for e in vocab.encode_batch(["<|im_start|>", "<|im_end|>"])] == [[1], [2]]
    with pytest.raises(AuditError, match="look-ups"):
        vocab.encode_batch(["<|im_start|>"])


def test_lookups_are_bounded_over_every_text_together(tmp_path):
    gf = _facts(["<unk>"] + [f"<|c{i}|>" for i in range(1000)], [2] + [3] * 1000)
    vocab = GGUFVocab(gf, tmp_path / "m.gguf", max_lookups=10_000)
    vocab.encode_batch([f"<|x{i}|>" for i in range(10)])  # well under the bound
    with pytest.raises(AuditError, match="m.gguf.*over 10,000 look-ups") as err:
        vocab.encode_batch([f"<|x{i}|>" for i in range(1000)])
    assert str(tmp_path / "m.gguf") in str(err.value)


def _part(path: Path, n_keys: int, tensors: list[bytes] | None = None) -> Path:
    kvs = [_gkv(f"k{i}", 4, struct.pack("<I", i)) for i in range(n_keys)]
    path.write_bytes(gguf_bytes(kvs, tensors if tensors is not None else []))
    return path


def test_one_budget_bounds_the_keys_of_every_part(tmp_path):
    budget = ReadBudget(entries=250)
    read_gguf(_part(tmp_path / "a.gguf", 100), "a.gguf", budget=budget)
    read_gguf(_part(tmp_path / "b.gguf", 100), "b.gguf", budget=budget)
    with pytest.raises(AuditError, match="c.gguf.*over 250 keys and tensors together"):
        read_gguf(_part(tmp_path / "c.gguf", 100), "c.gguf", budget=budget)
    read_gguf(tmp_path / "c.gguf", "c.gguf")  # alone, it is fine


def test_one_budget_bounds_the_array_items_of_every_part(tmp_path):
    path = tmp_path / "a.gguf"
    path.write_bytes(gguf_bytes([_gtokens([b"x"] * 100)]))
    budget = ReadBudget(items=150)
    read_gguf(path, "a.gguf", budget=budget)
    with pytest.raises(AuditError, match="over 150 array items"):
        read_gguf(path, "a.gguf", budget=budget)


def _split(folder: Path, count: int) -> Path:
    first = folder / f"m-00001-of-{count:05d}.gguf"
    first.write_bytes(gguf_bytes([_gkv("general.architecture", 8, _gs(b"llama")), _gtokens(),
                                  _gkv("split.count", 2, struct.pack("<H", count))]))
    return first


def test_split_parts_are_read_and_their_tensors_gathered(tmp_path):
    first = _split(tmp_path, 2)
    _part(tmp_path / "m-00002-of-00002.gguf", 3, [_gtensor("output.weight")])
    gf, _, by_name = read_gguf_facts(first)
    assert gf.files == ("m-00001-of-00002.gguf", "m-00002-of-00002.gguf")
    assert set(by_name) == {"token_embd.weight", "output.weight"}


def test_a_split_part_that_links_out_of_the_folder_is_refused(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    first = _split(folder, 2)
    _part(tmp_path / "elsewhere.gguf", 1, [_gtensor("output.weight")])
    (folder / "m-00002-of-00002.gguf").symlink_to(tmp_path / "elsewhere.gguf")
    with pytest.raises(AuditError, match="m-00002-of-00002.gguf: points outside"):
        read_gguf_facts(first)


def test_a_split_part_linking_inside_the_folder_is_read(tmp_path):
    first = _split(tmp_path, 2)
    _part(tmp_path / "blob", 1, [_gtensor("output.weight")])
    (tmp_path / "m-00002-of-00002.gguf").symlink_to(tmp_path / "blob")
    assert "output.weight" in read_gguf_facts(first)[2]


def test_one_budget_bounds_the_string_bytes_of_every_part(tmp_path):
    path = tmp_path / "a.gguf"
    path.write_bytes(gguf_bytes([_gkv("tokenizer.chat_template", 8, _gs(b"x" * 1000))]))
    budget = ReadBudget(kept=1500)
    read_gguf(path, "a.gguf", budget=budget)
    with pytest.raises(AuditError, match="strings exceed 1500 bytes"):
        read_gguf(path, "a.gguf", budget=budget)
