"""Shards with no vocabulary tensor are copied while the tokenizer is read (fix/early.py): the same
output, verified the same way, and nothing left behind when the copy fails."""

from __future__ import annotations

import errno
import json
import os

import pytest
from transformers import AutoModelForCausalLM

from hf_vocab_audit.errors import AuditError
from hf_vocab_audit.fix import early, fix_checkpoint
from hf_vocab_audit.io import file_copy

from .fixkit import broken


def _sharded(folder):
    broken(folder, hidden_size=64, intermediate_size=128, num_hidden_layers=2, tie_word_embeddings=False)
    model = AutoModelForCausalLM.from_pretrained(folder)
    for f in folder.glob("model*.safetensors"):
        f.unlink()
    model.save_pretrained(folder, max_shard_size="60KB")
    index = json.loads((folder / "model.safetensors.index.json").read_text())["weight_map"]
    vocab = {index["model.embed_tokens.weight"], index["lm_head.weight"]}
    return folder, sorted(set(index.values()) - vocab)


def test_shards_without_vocabulary_tensors_are_copied_early(tmp_path, guard_input, monkeypatch):
    src, plain = _sharded(tmp_path / "m")
    guard_input(src)
    assert plain
    started = []
    real = early.start

    def spy(*args):
        copies = real(*args)
        started.append(copies.files if copies else None)
        return copies

    monkeypatch.setattr("hf_vocab_audit.fix.pipeline.start_early", spy)
    fix_checkpoint(src, output=tmp_path / "out", verify_load="never")
    assert started == [plain]
    for shard in plain:
        assert (tmp_path / "out" / shard).read_bytes() == (src / shard).read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m", "out"]  # no staging folder left


def test_a_failed_early_copy_leaves_nothing(tmp_path, guard_input, monkeypatch):
    src, _plain = _sharded(tmp_path / "m")
    guard_input(src)

    def disk_full(a, b):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(file_copy, "copy_file", disk_full)
    with pytest.raises(AuditError, match="out: cannot be written \\(No space left on device\\)"):
        fix_checkpoint(src, output=tmp_path / "out", verify_load="never")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]


def test_closing_stops_the_copies_after_the_file_being_copied(tmp_path, monkeypatch):
    """A fix that fails (or is interrupted) while shards are copied early does not wait for the rest."""
    import threading

    src, plain = _sharded(tmp_path / "m")
    assert len(plain) >= 2
    first_started, release, copied = threading.Event(), threading.Event(), []
    real_copy = file_copy.copy_file

    def slow_copy(a, b):
        first_started.set()
        release.wait(timeout=30)
        copied.append(a.name)
        real_copy(a, b)

    monkeypatch.setattr(file_copy, "copy_file", slow_copy)
    copies = early.start(src, tmp_path / "out", False, None)
    assert copies is not None and copies.files == plain
    assert first_started.wait(timeout=30)
    closing = threading.Thread(target=copies.close)
    closing.start()
    while not copies._stop.is_set():  # close() has asked the copier to stop
        pass
    release.set()
    closing.join(timeout=30)
    assert copied == plain[:1]  # the file being copied finished; no other was started
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]  # the staging folder is gone
