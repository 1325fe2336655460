"""Slow-only tokenizers (Marian / SentencePiece, no tokenizer.json) are audited through the slow tokenizer."""

from __future__ import annotations

import torch
from family_builders import marian, marian_tokenizer

from hf_vocab_audit import audit


def translate_error(folder, text: str) -> str | None:
    """Tokenize with transformers' own (slow) tokenizer and run MarianMTModel.generate: the exception, or None."""
    from transformers import AutoTokenizer, MarianMTModel

    tok = AutoTokenizer.from_pretrained(folder, use_fast=False)
    model = MarianMTModel.from_pretrained(folder).eval()
    try:
        with torch.no_grad():
            model.generate(**tok([text], return_tensors="pt"), max_new_tokens=3)
    except IndexError as exc:
        return type(exc).__name__
    return None


def test_marian_healthy_pad_as_decoder_start_is_clean(tmp_path):
    length = marian_tokenizer(tmp_path)
    marian(tmp_path, length, pad=length - 1)
    assert not (tmp_path / "tokenizer.json").exists()
    assert translate_error(tmp_path, "the cat sat on the mat") is None
    report = audit(tmp_path)
    assert report.facts["tokenizer_length"] == length and report.facts["tokenizer_source"] == "transformers"
    assert report.facts["special_token_ids"]["pad"] == length - 1
    assert [f.code for f in report.findings if f.severity.value != "info"] == []


def test_marian_added_token_without_a_row(tmp_path):
    length = marian_tokenizer(tmp_path, added=["<2de>"])  # a target-language token added, model not resized
    marian(tmp_path, length - 1, pad=length - 2)
    assert translate_error(tmp_path, "<2de> the cat") == "IndexError"
    (f,) = [f for f in audit(tmp_path).findings if f.code == "HVA101"]
    assert f.location.token == "<2de>" and f.location.token_id == length - 1


def test_marian_fix_grows_shared_embeddings_and_final_logits_bias(tmp_path):
    from hf_vocab_audit.fix import fix_checkpoint

    length = marian_tokenizer(tmp_path / "m", added=["<2de>"])
    marian(tmp_path / "m", length - 1, pad=length - 2)
    report = fix_checkpoint(tmp_path / "m", output=tmp_path / "fixed")
    assert [f.code for f in report.findings if f.severity.value == "error"] == []
    grown = {g["name"]: (g["old"], g["new"]) for g in report.extra["fix"]["verification"]["grown"]}
    assert grown == {"final_logits_bias": (length - 1, length), "model.shared.weight": (length - 1, length)}
    assert translate_error(tmp_path / "fixed", "<2de> the cat") is None
