"""HVA517: per-token labels vs input_ids, row by row; the model's own forward (and collator) decide."""

from __future__ import annotations

import pytest
import torch
from builders import checkpoint
from dataset_builders import write_parquet

from hf_vocab_audit import audit


def forward_error(folder, arch: str, rows: list[dict], collate: bool = False) -> str | None:
    """Run the model with each row's labels (batch of one), or one collated batch: the exception, or None."""
    import transformers

    model = getattr(transformers, arch).from_pretrained(folder)
    try:
        if collate:
            tok = transformers.AutoTokenizer.from_pretrained(folder)
            batch = transformers.DataCollatorForTokenClassification(tok)(rows)
            model(**batch)
        for row in rows:
            model(input_ids=torch.tensor([row["input_ids"]]), labels=torch.tensor([row["labels"]]))
    except (ValueError, RuntimeError, IndexError) as exc:
        return type(exc).__name__
    return None


def hva517(model, data):
    return [f for f in audit(model, datasets=[str(data)], select=["HVA5"]).findings if f.code == "HVA517"]


@pytest.fixture(scope="module")
def token_cls(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tokcls")
    return checkpoint(folder, "bert-tok", 104, model={"num_labels": 3})


def test_token_labels_longer_than_truncated_inputs(token_cls, tmp_path):
    rows = [{"input_ids": [2, 7, 8, 3], "labels": [-100, 1, 2, -100]},
            {"input_ids": [2, 7, 3], "labels": [-100, 1, 2, 0, -100]},  # inputs truncated, labels not
            {"input_ids": [2, 9, 3], "labels": [-100, 0, -100]}]
    assert forward_error(token_cls, "BertForTokenClassification", rows) == "ValueError"
    assert forward_error(token_cls, "BertForTokenClassification", rows, collate=True) is not None
    data = write_parquet(tmp_path / "d.parquet", {k: [r[k] for r in rows] for k in ("input_ids", "labels")})
    (f,) = hva517(token_cls, data)
    assert f.severity.value == "error" and (f.location.column, f.location.row) == ("labels", 1)
    assert f.message == ("split 'train' column 'labels': 1 row(s) whose labels are not as long as input_ids; "
                         "first at row 1 (labels 5, input_ids 3); likely cause: truncation applied to the inputs only")


def test_token_labels_aligned_are_quiet(token_cls, tmp_path):
    rows = [{"input_ids": [2, 7, 8, 3], "labels": [-100, 1, 2, -100]}, {"input_ids": [2, 7, 3], "labels": [-100, 1, -100]}]
    assert forward_error(token_cls, "BertForTokenClassification", rows, collate=True) is None
    data = write_parquet(tmp_path / "d.parquet", {k: [r[k] for r in rows] for k in ("input_ids", "labels")})
    assert hva517(token_cls, data) == []


def test_causal_lm_labels_shorter_than_inputs(tmp_path):
    model = checkpoint(tmp_path / "m", "llama", 104)
    rows = [{"input_ids": [1, 5, 6, 2], "labels": [1, 5, 6, 2]}, {"input_ids": [1, 5, 6, 7, 2], "labels": [1, 5, 6]}]
    assert forward_error(model, "LlamaForCausalLM", rows) == "ValueError"
    data = write_parquet(tmp_path / "d.parquet", {k: [r[k] for r in rows] for k in ("input_ids", "labels")})
    (f,) = hva517(model, data)
    assert "row 1 (labels 3, input_ids 5)" in f.message and "another tokenization" in f.message
    assert forward_error(model, "LlamaForCausalLM", rows[:1]) is None
    data = write_parquet(tmp_path / "ok.parquet", {k: [r[k] for r in rows[:1]] for k in ("input_ids", "labels")})
    assert hva517(model, data) == []


def test_seq2seq_labels_have_their_own_length(tmp_path):
    model = checkpoint(tmp_path / "m", "t5", 104)
    rows = [{"input_ids": [5, 6, 7, 1], "labels": [8, 1]}]
    assert forward_error(model, "T5ForConditionalGeneration", rows) is None
    data = write_parquet(tmp_path / "d.parquet", {k: [r[k] for r in rows] for k in ("input_ids", "labels")})
    assert hva517(model, data) == []
