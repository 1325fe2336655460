"""Tiny real checkpoints for the guard tests, built once per session (transformers' own classes)."""

from __future__ import annotations

from pathlib import Path

import pytest
from builders import checkpoint


@pytest.fixture(scope="session")
def guard_ckpts(tmp_path_factory) -> dict[str, Path]:
    """kind -> checkpoint folder: causal LM, classifier (3 labels), BERT MLM, RoBERTa, T5, BART."""
    root = tmp_path_factory.mktemp("guard-ckpts")
    return {
        "llama": checkpoint(root / "llama", "llama", rows=104),
        "llama-cls": checkpoint(root / "llama-cls", "llama-cls", rows=104, model={"num_labels": 3}),
        "bert": checkpoint(root / "bert", "bert", rows=100),
        "roberta": checkpoint(root / "roberta", "roberta", rows=100),
        "t5": checkpoint(root / "t5", "t5", rows=100),
        "bart": checkpoint(root / "bart", "bart", rows=100),
    }


@pytest.fixture(scope="session")
def load_model(guard_ckpts):
    """kind -> the model loaded with its real weights (cached; eval mode)."""
    import transformers

    cache: dict[str, object] = {}

    def load(kind: str):
        if kind not in cache:
            cfg = transformers.AutoConfig.from_pretrained(guard_ckpts[kind])
            cls = getattr(transformers, cfg.architectures[0])
            cache[kind] = cls.from_pretrained(guard_ckpts[kind]).eval()
        return cache[kind]

    return load


@pytest.fixture()
def quick_worker_shutdown(monkeypatch):
    """After a worker raised, torch joins each worker with a 5 s timeout; shut them down here, quickly."""
    import gc

    import torch.utils.data._utils as data_utils

    monkeypatch.setattr(data_utils, "MP_STATUS_CHECK_INTERVAL", 0.2)  # read by the forked workers too
    yield
    gc.collect()  # the iterator (held by the caught traceback) shuts its workers down now
