"""Two families the audit used to refuse (exit 2), each decided by running transformers on CPU.

CTC speech models (Wav2Vec2/HuBERT/WavLM ``ForCTC``) read audio, so they have no token embedding; their
vocabulary is the CTC head (``lm_head`` rows = ``config.vocab_size``) and a ``Wav2Vec2CTCTokenizer``. The
tokenizer's ids are the CTC classes: the audit compares them with the head, never reports a gap.

DeBERTa-v2/v3 ship a SentencePiece ``spm.model`` and a ``tokenizer_config.json`` naming
``DebertaV2Tokenizer``, without ``tokenizer.json``; the folder is a slow tokenizer folder like ``spiece.model``.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
spm = pytest.importorskip("sentencepiece")

from hf_vocab_audit.facts.sources.folder import gather  # noqa: E402

CHARS = "abcdefghij"


def _ctc(folder: Path, kind: str, added: int = 0, **config: Any) -> Path:
    """A tiny ``<kind>ForCTC`` with a character CTC tokenizer (15 ids) and ``added`` tokens past them."""
    folder.mkdir(parents=True, exist_ok=True)
    vocab = {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3, "|": 4, **{c: 5 + i for i, c in enumerate(CHARS)}}
    (folder / "vocab.json").write_text(json.dumps(vocab))
    tok = transformers.Wav2Vec2CTCTokenizer(str(folder / "vocab.json"))
    if added:
        tok.add_tokens([f"<x{i}>" for i in range(added)])
    tok.save_pretrained(folder)
    cfg_cls = getattr(transformers, f"{kind}Config")
    model_cls = getattr(transformers, f"{kind}ForCTC")
    cfg = cfg_cls(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                  intermediate_size=32, conv_dim=(8, 8), conv_stride=(5, 2), conv_kernel=(10, 3),
                  num_conv_pos_embeddings=4, num_conv_pos_embedding_groups=2, pad_token_id=0, **config)
    torch.manual_seed(0)
    model_cls(cfg).save_pretrained(folder)
    return folder


def _ctc_training_fails(folder: Path) -> bool:
    """Whether one training step on a transcript holding the tokenizer's largest id (or with the config's
    blank) fails on CPU: the verdict the gate must give."""
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForCTC.from_pretrained(folder).eval()
    labels = torch.tensor([[5, 6, len(tok) - 1]])
    try:
        loss = model(torch.randn(1, 4000), labels=labels).loss
    except (ValueError, RuntimeError, IndexError):
        return True
    return not bool(torch.isfinite(loss))


@pytest.mark.parametrize("kind", ["Wav2Vec2", "Hubert", "WavLM"])
def test_healthy_ctc_model_passes_by_its_head(tmp_path: Path, run_cli: Any, kind: str) -> None:
    folder = _ctc(tmp_path / "m", kind)
    assert not _ctc_training_fails(folder)
    code, out, _ = run_cli("check", folder)
    assert code == 0, out
    assert "NOT EXAMINED" not in out and "no tensor recognised" not in out
    assert "lm_head.weight" in out  # the head is the vocabulary audited
    facts = gather(folder)
    assert facts.embeddings is not None and facts.embeddings.ctc_head
    assert "input_embedding" not in facts.missing


@pytest.mark.parametrize("kind", ["Wav2Vec2", "Hubert"])
def test_ctc_tokenizer_past_the_head_fails(tmp_path: Path, run_cli: Any, kind: str) -> None:
    folder = _ctc(tmp_path / "m", kind, added=3)
    assert _ctc_training_fails(folder)  # ValueError: Label values must be <= vocab_size: 15
    code, out, _ = run_cli("check", folder)
    assert code == 1, out
    assert "HVA102" in out and "CTC head" in out and "'<x2>' (17)" in out


def test_ctc_blank_outside_the_head_fails(tmp_path: Path, run_cli: Any) -> None:
    folder = _ctc(tmp_path / "m", "Wav2Vec2")
    cfg = json.loads((folder / "config.json").read_text())
    cfg["pad_token_id"] = cfg["vocab_size"]
    (folder / "config.json").write_text(json.dumps(cfg))
    assert _ctc_training_fails(folder)  # RuntimeError: blank must be in label range
    code, out, _ = run_cli("check", folder)
    assert code == 1, out
    assert "the CTC blank" in out and "pad_token_id 15" in out


def _deberta(folder: Path, rows: int, added: int = 0) -> Path:
    """A DeBERTa-v2 folder as the Hub ships it: ``spm.model`` + ``tokenizer_config.json``, no tokenizer.json;
    ``added`` tokens declared past the SentencePiece pieces."""
    folder.mkdir(parents=True, exist_ok=True)
    text = ["hello world this is a tiny corpus", "the quick brown fox jumps over the lazy dog"] * 50
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(text), model_writer=model, vocab_size=32,
                                   model_type="unigram", pad_id=0, bos_id=1, eos_id=2, unk_id=3,
                                   pad_piece="[PAD]", bos_piece="[CLS]", eos_piece="[SEP]", unk_piece="[UNK]",
                                   user_defined_symbols=["[MASK]"], minloglevel=2)
    (folder / "spm.model").write_bytes(model.getvalue())
    cfg: dict[str, Any] = {"tokenizer_class": "DebertaV2Tokenizer", "do_lower_case": False, "bos_token": "[CLS]",
                           "eos_token": "[SEP]", "unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]",
                           "cls_token": "[CLS]", "mask_token": "[MASK]", "split_by_punct": False,
                           "vocab_type": "spm", "model_max_length": 64}
    if added:
        cfg["added_tokens_decoder"] = {
            str(32 + i): {"content": f"<x{i}>", "lstrip": False, "normalized": False, "rstrip": False,
                          "single_word": False, "special": True} for i in range(added)}
    (folder / "tokenizer_config.json").write_text(json.dumps(cfg))
    config = transformers.DebertaV2Config(vocab_size=rows, hidden_size=16, num_hidden_layers=1,
                                          num_attention_heads=2, intermediate_size=32,
                                          max_position_embeddings=64, pad_token_id=0)
    torch.manual_seed(0)
    transformers.DebertaV2ForMaskedLM(config).save_pretrained(folder)
    assert not (folder / "tokenizer.json").exists()
    return folder


def _deberta_lookup_fails(folder: Path) -> tuple[int, bool]:
    """(len(AutoTokenizer), whether the model's forward on the tokenizer's largest id fails on CPU)."""
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForMaskedLM.from_pretrained(folder).eval()
    text = tok.convert_ids_to_tokens(len(tok) - 1)
    ids = tok(f"hello {text}", return_tensors="pt")["input_ids"]
    assert int(ids.max()) == len(tok) - 1
    try:
        model(input_ids=ids)
    except IndexError:
        return len(tok), True
    return len(tok), False


def test_healthy_deberta_v2_spm_model_passes(tmp_path: Path, run_cli: Any) -> None:
    folder = _deberta(tmp_path / "m", rows=32)
    length, fails = _deberta_lookup_fails(folder)
    assert not fails
    code, out, _ = run_cli("check", folder)
    assert code == 0, out
    assert f"tokenizer         len {length}, ids up to {length - 1}" in out
    assert "NOT EXAMINED" not in out


def test_deberta_v2_tokens_past_the_rows_fail(tmp_path: Path, run_cli: Any) -> None:
    folder = _deberta(tmp_path / "m", rows=32, added=5)
    length, fails = _deberta_lookup_fails(folder)
    assert fails and length == 37
    code, out, _ = run_cli("check", folder)
    assert code == 1, out
    assert "HVA101" in out and "'<x4>' (36)" in out


def test_ctc_architecture_never_hides_a_token_embedding(tmp_path: Path, run_cli: Any) -> None:
    """``architectures`` is the checkpoint's word: a text model that names a ForCTC class keeps its token
    embedding audited (an id past it still fails the gate), and is not read as a CTC head."""
    import numpy as np
    from safetensors.numpy import save_file

    folder = _ctc(tmp_path / "m", "Wav2Vec2", added=3)
    cfg = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**cfg, "model_type": "my-own"}))
    save_file({"model.embed_tokens.weight": np.zeros((15, 4), np.float32),
               "lm_head.weight": np.zeros((18, 4), np.float32)}, str(folder / "model.safetensors"))
    facts = gather(folder)
    assert facts.embeddings is not None and not facts.embeddings.ctc_head
    assert facts.embeddings.input is not None and facts.embeddings.input.name == "model.embed_tokens.weight"
    code, out, _ = run_cli("check", folder)
    assert code == 1 and "HVA101" in out, out
