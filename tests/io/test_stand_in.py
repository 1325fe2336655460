"""Stand-ins for weights and tokenizer files (issue 24): recognised by their first bytes, never a real file."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from malformed import embedding_header, lfs_pointer, safetensors_bytes

from hf_vocab_audit.errors import AuditError
from hf_vocab_audit.io.stand_in import describe, refuse_stand_in


def test_a_pointer_names_the_fix_and_the_real_size():
    why = describe(lfs_pointer(123456), 133, binary=True)
    assert why is not None and "Git LFS pointer" in why and "123456-byte" in why
    assert "git lfs pull" in why and "lfs: true" in why


@pytest.mark.parametrize(("head", "binary", "says"), [
    (b"", True, "empty"),
    (b"<!DOCTYPE html><html><body>404</body></html>", True, "HTML"),
    (b"\n  <html lang=en>", False, "HTML"),
    (b"<?xml version='1.0'?><Error><Code>AccessDenied</Code></Error>", True, "HTML/XML"),
    (b"not a model, see the README\n", True, "text file"),
])
def test_other_stand_ins(head: bytes, binary: bool, says: str):
    why = describe(head, len(head), binary=binary)
    assert why is not None and says in why


def test_text_is_refused_only_where_the_real_file_is_binary():
    assert describe(b'{"version": "1.0"}', 18, binary=False) is None  # tokenizer.json, vocab.txt are text


def test_real_files_are_not_stand_ins(tmp_path: Path):
    """A safetensors file, both torch formats and a SentencePiece model, each written by its own library."""
    import sentencepiece as spm
    import torch

    header, data = embedding_header()
    (tmp_path / "model.safetensors").write_bytes(safetensors_bytes(header, data))
    torch.save({"w": torch.zeros(2, 2)}, tmp_path / "zip.bin")
    torch.save({"w": torch.zeros(2, 2)}, tmp_path / "legacy.bin", _use_new_zipfile_serialization=False)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(f"word{i} other{i % 7} text{i % 3}" for i in range(200)), encoding="utf-8")
    spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(tmp_path / "sp"), vocab_size=30,
                                   minloglevel=2)
    for name in ("model.safetensors", "zip.bin", "legacy.bin", "sp.model"):
        refuse_stand_in(tmp_path / name, binary=True)  # no AuditError


def test_a_safetensors_header_length_cannot_be_eight_text_bytes():
    """Why text in a binary's place is safe to refuse: 8 printable bytes are a length of at least 2^56."""
    assert struct.unpack("<Q", b"        ")[0] >= 2**56


def test_refusal_names_the_file(tmp_path: Path):
    path = tmp_path / "tokenizer.model"
    path.write_bytes(lfs_pointer())
    with pytest.raises(AuditError, match="tokenizer.model: is a Git LFS pointer"):
        refuse_stand_in(path, binary=True)
