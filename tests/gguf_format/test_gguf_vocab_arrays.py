"""HVA906 (scores / token types of another length than the token list) and vocabulary-only GGUFs (a tokenizer
and no tensors, as llama.cpp's ``vocab_only`` files): what llama.cpp's ``src/llama-vocab.cpp`` (as vendored by
llama-cpp-python 0.3.36) does with each, read from its ``llama_vocab::impl::load``."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("gguf")

from gguf_builders import base_vocab, write_gguf  # noqa: E402

from hf_vocab_audit.audit import audit_gguf  # noqa: E402


def hits(path: Path, code: str) -> list:
    return [f for f in audit_gguf(path).findings if f.code == code]


def test_healthy_gguf_arrays_are_quiet(tmp_path: Path) -> None:
    report = audit_gguf(write_gguf(tmp_path / "m.gguf"))
    assert not [f for f in report.findings if f.code in ("HVA906", "HVA907")]
    assert {"HVA906", "HVA907"} <= set(report.rules_run) and report.exit_code() == 0


def test_scores_shorter_than_tokens_is_refused_by_llama_cpp(tmp_path: Path) -> None:
    vocab = base_vocab()
    vocab.scores = vocab.scores[:63]
    report = audit_gguf(write_gguf(tmp_path / "m.gguf", vocab=vocab))
    (hit,) = [f for f in report.findings if f.code == "HVA906"]
    assert hit.severity.value == "error" and hit.location.key == "tokenizer.ggml.scores"
    assert "Index out of array bounds for scores (63 < 64)" in hit.message
    assert report.exit_code() == 1


def test_scores_longer_than_tokens(tmp_path: Path) -> None:
    vocab = base_vocab()
    vocab.scores = vocab.scores + [0.0, 0.0]
    (hit,) = hits(write_gguf(tmp_path / "m.gguf", vocab=vocab), "HVA906")
    assert "66 entries for 64 tokens" in hit.message and "out of step" in hit.message


def test_token_types_shorter_than_tokens(tmp_path: Path) -> None:
    vocab = base_vocab()
    vocab.types = vocab.types[:60]
    (hit,) = hits(write_gguf(tmp_path / "m.gguf", vocab=vocab), "HVA906")
    assert hit.location.key == "tokenizer.ggml.token_type"
    assert "Index out of array bounds for toktypes (60 < 64)" in hit.message


def test_vocab_only_gguf_is_audited_without_a_weights_gap(tmp_path: Path) -> None:
    report = audit_gguf(write_gguf(tmp_path / "vocab.gguf", tensors=False))
    assert report.exit_code() == 0 and not report.coverage.not_examined
    skipped = {s.rule: s.reason for s in report.skipped}
    assert "vocabulary-only GGUF" in skipped["HVA101"] and "HVA906" in report.rules_run
    assert report.facts["gguf"]["vocab_only"] is True


def test_vocab_only_gguf_special_id_past_tokens(tmp_path: Path) -> None:
    vocab = base_vocab()
    vocab.specials["eos_token_id"] = 99
    report = audit_gguf(write_gguf(tmp_path / "vocab.gguf", vocab=vocab, tensors=False))
    (hit,) = [f for f in report.findings if f.code == "HVA907"]
    assert hit.location.key == "tokenizer.ggml.eos_token_id" and hit.location.token_id == 99
    assert "bad special token: 'tokenizer.ggml.eos_token_id' = 99" in hit.message
    assert report.exit_code() == 1


def test_vocab_only_gguf_scores_checked(tmp_path: Path) -> None:
    vocab = base_vocab()
    vocab.scores = vocab.scores[:10]
    assert hits(write_gguf(tmp_path / "vocab.gguf", vocab=vocab, tensors=False), "HVA906")


def test_special_id_past_tokens_with_weights_is_hva201_not_hva907(tmp_path: Path) -> None:
    vocab = base_vocab()
    vocab.specials["eos_token_id"] = 99
    report = audit_gguf(write_gguf(tmp_path / "m.gguf", vocab=vocab))
    found = {f.code for f in report.findings}
    assert "HVA201" in found and "HVA907" not in found


def test_gguf_without_tensors_or_tokens_is_still_a_gap(tmp_path: Path) -> None:
    vocab = base_vocab()
    vocab.tokens, vocab.types, vocab.scores = [], [], []
    report = audit_gguf(write_gguf(tmp_path / "empty.gguf", vocab=vocab, tensors=False))
    assert report.coverage.not_examined and report.exit_code() == 2
