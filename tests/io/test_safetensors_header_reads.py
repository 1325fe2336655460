"""read_header opens a shard once: a stand-in, a FIFO and a truncated header are still refused by name."""

from __future__ import annotations

import json
import os
import struct

import pytest

from hf_vocab_audit.errors import AuditError
from hf_vocab_audit.io.safetensors_header import read_header


def _shard(path, header: dict, data: bytes = b"") -> None:
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data)


def test_a_header_longer_than_the_first_read_is_read_whole(tmp_path):
    """The first read takes 1 KB for the stand-in check; a longer header continues from there."""
    header = {f"model.layers.{i}.weight": {"dtype": "F32", "shape": [1], "data_offsets": [4 * i, 4 * i + 4]}
              for i in range(200)}
    path = tmp_path / "model.safetensors"
    _shard(path, header, b"\0" * 800)
    got = read_header(path, path.name)
    assert [t.name for t in got.tensors] == list(header)
    assert got.data_start == 8 + len(json.dumps(header).encode())


def test_an_lfs_pointer_shard_is_named_with_the_fix(tmp_path):
    path = tmp_path / "model-00001-of-00002.safetensors"
    path.write_text("version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 4000000000\n")
    with pytest.raises(AuditError, match="Git LFS pointer .*git lfs pull") as info:
        read_header(path, path.name)
    assert str(path) in str(info.value)


def test_a_fifo_is_refused_without_opening_it(tmp_path):
    path = tmp_path / "model.safetensors"
    os.mkfifo(path)
    with pytest.raises(AuditError, match="not a regular file"):
        read_header(path, path.name)  # opening a FIFO for reading would block forever


def test_a_header_cut_short_is_refused(tmp_path):
    path = tmp_path / "model.safetensors"
    path.write_bytes(struct.pack("<Q", 5000) + b"{" * 100 + b"\0" * 5000)
    with pytest.raises(AuditError, match="not valid JSON"):
        read_header(path, path.name)
    path.write_bytes(struct.pack("<Q", 5000) + b"{}")
    with pytest.raises(AuditError, match="larger than the file"):
        read_header(path, path.name)
