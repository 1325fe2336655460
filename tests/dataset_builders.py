"""Dataset-audit fixtures and data writers: tiny checkpoints, the real MiniLM with a 3-class head.

Imported by tests/dataset/conftest.py and tests/rules/test_dataset_rules.py.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from builders import checkpoint, edit_json


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def write_parquet(path: Path, columns: dict[str, Any]) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns), path)
    return path


@pytest.fixture(scope="session")
def bert_cls(tmp_path_factory) -> Path:
    """BertForSequenceClassification, 3 labels, 104 rows, 64 positions, type_vocab_size 2."""
    folder = tmp_path_factory.mktemp("bert_cls")
    checkpoint(folder, "bert-cls", rows=104, model={"num_labels": 3})
    return folder


@pytest.fixture(scope="session")
def llama_lm(tmp_path_factory) -> Path:
    """LlamaForCausalLM, 104 rows (untied lm_head), rotary positions (128), pad 3 != eos 2."""
    folder = tmp_path_factory.mktemp("llama_lm")
    checkpoint(folder, "llama", rows=104)
    return folder


@pytest.fixture(scope="session")
def llama_pad_eos(tmp_path_factory) -> Path:
    """LlamaForCausalLM whose tokenizer and config use eos as the pad token."""
    folder = tmp_path_factory.mktemp("llama_pad_eos")
    checkpoint(folder, "llama", rows=104, pad="</s>", model={"pad_token_id": 2})
    return folder


@pytest.fixture(scope="session")
def minilm_cls(tmp_path_factory, minilm_dir: Path) -> Path:
    """The real all-MiniLM-L6-v2 weights with a BertForSequenceClassification head (num_labels=3)."""
    import numpy as np
    from safetensors.numpy import load_file, save_file

    folder = tmp_path_factory.mktemp("minilm_cls")
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"):
        shutil.copy(minilm_dir / name, folder / name)
    tensors = load_file(str(minilm_dir / "model.safetensors"))
    tensors = {f"bert.{k}" if not k.startswith("bert.") else k: v for k, v in tensors.items()}
    rng = np.random.default_rng(0)
    tensors["classifier.weight"] = rng.normal(0, 0.02, (3, 384)).astype(np.float32)
    tensors["classifier.bias"] = np.zeros(3, dtype=np.float32)
    save_file(tensors, str(folder / "model.safetensors"))
    names = {0: "negative", 1: "neutral", 2: "positive"}
    edit_json(folder / "config.json", architectures=["BertForSequenceClassification"],
              id2label={str(k): v for k, v in names.items()}, label2id={v: k for k, v in names.items()})
    return folder
