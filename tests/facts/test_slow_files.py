"""The slow-tokenizer path is bounded before transformers sees a file (issue 24, class 1)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from family_builders import marian_tokenizer
from malformed import VOCAB, sentencepiece_model

from hf_vocab_audit.errors import AuditError
from hf_vocab_audit.facts.tokenizer.folder import load_tokenizer
from hf_vocab_audit.facts.tokenizer.slow_files import check_slow_folder, check_tokenizer_class, sentencepiece_pieces


def test_a_real_sentencepiece_model_reads_as_the_library_reads_it(tmp_path: Path):
    """The protobuf walk gives the same pieces as the sentencepiece library, and the folder passes."""
    import sentencepiece as spm

    marian_tokenizer(tmp_path)
    sp = spm.SentencePieceProcessor(model_file=str(tmp_path / "source.spm"))
    pieces = sentencepiece_pieces((tmp_path / "source.spm").read_bytes(), tmp_path / "source.spm")
    assert [p.decode() for p in pieces] == [sp.id_to_piece(i) for i in range(sp.get_piece_size())]
    check_slow_folder(tmp_path)
    assert load_tokenizer(tmp_path).source == "transformers"


def test_the_hand_made_model_is_one_the_library_loads(tmp_path: Path):
    """The catalogue's model bytes are a valid ModelProto (so its cases test our bounds, not a parse error)."""
    import sentencepiece as spm

    path = tmp_path / "spiece.model"
    path.write_bytes(sentencepiece_model(VOCAB))
    sp = spm.SentencePieceProcessor()
    sp.LoadFromSerializedProto(path.read_bytes())
    assert [sp.id_to_piece(i) for i in range(sp.get_piece_size())] == VOCAB


@pytest.mark.parametrize(("value", "ok"), [
    ("T5Tokenizer", True), ("BertTokenizerFast", True), ("TokenizersBackend", True), (None, True),
    ("LlamaForCausalLM", False), ("LlamaModel", False), ("os.system", False), (["BertTokenizer"], False),
])
def test_only_tokenizer_classes(value: object, ok: bool, tmp_path: Path):
    if ok:
        check_tokenizer_class(tmp_path / "tokenizer_config.json", value)
    else:
        with pytest.raises(AuditError, match="tokenizer_class"):
            check_tokenizer_class(tmp_path / "tokenizer_config.json", value)


def test_a_denormalizer_charsmap_is_checked_too(tmp_path: Path):
    raw = sentencepiece_model(VOCAB) + b"\x2a\x0a\x12\x08" + struct.pack("<I", 2**31) + bytes(4)  # field 5
    with pytest.raises(AuditError, match="2147483648-byte trie"):
        sentencepiece_pieces(raw, tmp_path / "spiece.model")


def test_a_truncated_protobuf_is_one_line(tmp_path: Path):
    with pytest.raises(AuditError, match="not a SentencePiece model"):
        sentencepiece_pieces(sentencepiece_model(VOCAB)[:-3] + b"\x0a\xff\xff\xff\x0f", tmp_path / "x.model")
