"""The proof step: a wrong byte or a finding that survives discards the output."""

from __future__ import annotations

import shutil

import pytest

from hf_vocab_audit.fix import fix_checkpoint, surgical
from hf_vocab_audit.fix.verify import VerificationError
from hf_vocab_audit.io import file_copy

from .fixkit import broken


def test_a_changed_byte_in_a_copied_tensor_fails_verification(tmp_path, guard_input, monkeypatch):
    src = guard_input(broken(tmp_path / "m"))
    real = surgical.rewrite_shard

    def corrupt(facts, shard, dst, plan):
        grown = real(facts, shard, dst, plan)
        data = bytearray(dst.read_bytes())
        data[-1] ^= 0x01  # the last byte of the last tensor, which did not grow
        dst.write_bytes(bytes(data))
        return grown

    monkeypatch.setattr(surgical, "rewrite_shard", corrupt)
    with pytest.raises(VerificationError, match="out: verification failed, nothing written: tensor .*: bytes of the "
                                                "input differ in the output"):
        fix_checkpoint(src, output=tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_finding_that_survives_the_fix_fails_verification(tmp_path, guard_input, monkeypatch):
    src = guard_input(broken(tmp_path / "m"))
    from hf_vocab_audit.fix import pipeline as fix_module

    def unedited(src, dst, plan):  # the edited files copied as they were: config vocab_size stays stale
        for name in plan.edited_files:
            shutil.copyfile(src / name, dst / name)

    monkeypatch.setattr(fix_module, "apply_edits", unedited)
    with pytest.raises(
        VerificationError, match="the fix introduced HVA103: config.json vocab_size is 104 but model.embed_tokens.weight has 106 rows"):
        fix_checkpoint(src, output=tmp_path / "out", verify_load="never")
    assert not (tmp_path / "out").exists()


def test_a_shard_not_copied_whole_fails_verification(tmp_path, guard_input, monkeypatch):
    """Untouched shards are copied by the kernel and not read again: a short copy must still be caught."""
    from transformers import AutoModelForCausalLM

    src = tmp_path / "m"
    broken(src, hidden_size=64, intermediate_size=128, num_hidden_layers=2, tie_word_embeddings=False)
    model = AutoModelForCausalLM.from_pretrained(src)
    for f in src.glob("model*.safetensors"):
        f.unlink()
    model.save_pretrained(src, max_shard_size="60KB")
    guard_input(src)
    real = file_copy.copy_file

    def short(a, b):
        real(a, b)
        if a.suffix == ".safetensors":
            with open(b, "r+b") as fh:
                fh.truncate(b.stat().st_size - 1)

    monkeypatch.setattr(file_copy, "copy_file", short)
    with pytest.raises(VerificationError, match="verification failed, nothing written: .*"):
        fix_checkpoint(src, output=tmp_path / "out", verify_load="never")
    assert not (tmp_path / "out").exists()
