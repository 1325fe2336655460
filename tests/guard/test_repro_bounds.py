"""repro's evidence is untrusted (issue 24, class 3): files inside their folder and bounded, replay length
bounded by the model's positions."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from hf_vocab_audit.errors import AuditError
from hf_vocab_audit.guard.evidence import read_evidence
from hf_vocab_audit.repro import MAX_REPLAY_POSITIONS, bounded_replay


def test_the_replay_is_cut_one_past_the_positions():
    batch = {"input_ids": torch.zeros(2, 1000, dtype=torch.long), "attention_mask": torch.ones(2, 1000),
             "labels": torch.zeros(2, dtype=torch.long), "pixel_values": torch.zeros(2, 3, 8, 8)}
    cut, note = bounded_replay(batch, 64)
    assert cut["input_ids"].shape == (2, 65) and cut["attention_mask"].shape == (2, 65)
    assert cut["labels"].shape == (2,) and cut["pixel_values"].shape == (2, 3, 8, 8)
    assert note is not None and "65 of 1000" in note


def test_short_batches_and_unknown_positions():
    batch = {"input_ids": torch.zeros(1, 64, dtype=torch.long)}
    assert bounded_replay(batch, 64) == (batch, None)
    long = {"input_ids": torch.zeros(1, MAX_REPLAY_POSITIONS + 5, dtype=torch.long)}
    cut, note = bounded_replay(long, None)
    assert cut["input_ids"].shape[-1] == MAX_REPLAY_POSITIONS and note is not None


def test_a_sidecar_that_is_not_json_names_itself(tmp_path: Path):
    from safetensors.torch import save_file

    batch = tmp_path / "batch.safetensors"
    save_file({"input_ids": torch.zeros(1, 4, dtype=torch.long)}, str(batch))
    batch.with_suffix(".json").write_bytes(b"\xff\xfe not json")
    with pytest.raises(AuditError, match=r"batch.json: not a readable JSON sidecar"):
        read_evidence(batch)
