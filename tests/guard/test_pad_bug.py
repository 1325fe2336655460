"""The classic: a pad token added in the training script without resize_token_embeddings."""

from __future__ import annotations

import json

import pytest
import transformers
from builders import checkpoint
from safetensors.torch import load_file

import hf_vocab_audit as hva


def load(folder):
    return transformers.AutoModelForCausalLM.from_pretrained(folder), transformers.AutoTokenizer.from_pretrained(folder)


def features(tok):
    return [tok("w1 w2 w3 w4"), tok("w5 w6")]


@pytest.fixture()
def no_pad_llama(tmp_path):
    return checkpoint(tmp_path / "llama", "llama", rows=104, pad=None, model={"pad_token_id": None})


def test_pad_added_without_resize_is_caught(no_pad_llama, tmp_path, capsys):
    model, tok = load(no_pad_llama)
    tok.add_special_tokens({"pad_token": "<pad>"})  # id 104: the model has 104 rows
    g = hva.guard(model, tok, evidence_dir=tmp_path / "evidence")
    with pytest.raises(hva.PreflightError) as pre:
        g.preflight()
    assert "HVA101" in {f.code for f in pre.value.report.findings}
    assert "HVA101" in capsys.readouterr().err

    collate = g.wrap(transformers.DataCollatorWithPadding(tok))
    with pytest.raises(hva.BatchIndexError) as caught:
        collate(features(tok))
    err = caught.value
    assert isinstance(err, IndexError)
    assert (err.code, err.key, err.row, err.position, err.value, err.limit) == ("HVA501", "input_ids", 1, 2, 104, 104)
    assert err.count == 2 and err.batch == 0 and err.rank == 0 and err.worker is None
    assert "pad token '<pad>' (id 104)" in err.cause and "without resizing" in err.cause
    assert "resize_token_embeddings" in err.fix
    # The evidence: the exact batch as safetensors, the context as JSON.
    saved = load_file(err.evidence)
    batch = transformers.DataCollatorWithPadding(tok)(features(tok))
    assert saved.keys() == {"input_ids", "attention_mask"} and saved["input_ids"].equal(batch["input_ids"])
    side = json.loads(open(err.evidence.replace(".safetensors", ".json")).read())
    assert side["limits"]["input_rows"] == 104 and side["violations"][0]["code"] == "HVA501"
    assert side["config"]["model_type"] == "llama"
    # ... and it is what the forward would have done.
    with pytest.raises(IndexError, match="index out of range in self"):
        model(**batch)


def test_after_a_resize_nothing_is_raised(no_pad_llama, tmp_path):
    model, tok = load(no_pad_llama)
    tok.add_special_tokens({"pad_token": "<pad>"})
    model.resize_token_embeddings(len(tok))
    g = hva.guard(model, tok, evidence_dir=tmp_path / "evidence")
    assert g.preflight().exit_code("error") == 0
    batch = g.wrap(transformers.DataCollatorWithPadding(tok))(features(tok))
    model(**batch)
    assert not (tmp_path / "evidence").exists()


def test_guard_made_before_the_resize_sees_it_after_refresh(no_pad_llama, tmp_path):
    model, tok = load(no_pad_llama)
    tok.add_special_tokens({"pad_token": "<pad>"})
    g = hva.guard(model, tok, evidence_dir=False)
    collate = g.wrap(transformers.DataCollatorWithPadding(tok))
    model.resize_token_embeddings(len(tok))
    g.refresh()
    collate(features(tok))


def test_qwen_style_padded_rows_are_not_an_error(tmp_path):
    folder = checkpoint(tmp_path / "padded", "llama", rows=128, tokenizer_vocab=100)  # Qwen-style: 28 padded rows
    model, tok = load(folder)
    g = hva.guard(model, tok, evidence_dir=tmp_path / "evidence")
    report = g.preflight()
    assert report.exit_code("error") == 0 and "HVA105" in {f.code for f in report.findings}
    batch = g.wrap(transformers.DataCollatorWithPadding(tok))(features(tok))
    model(**batch)
    assert g.limits.input_rows == 128 and not (tmp_path / "evidence").exists()
