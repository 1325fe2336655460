"""Real DataLoader workers and real torch.distributed ranks (gloo on CPU)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import transformers
from torch.utils.data import DataLoader

import hf_vocab_audit as hva

REPO = Path(__file__).resolve().parents[2]


def test_dataloader_worker_error_arrives_as_batch_index_error(guard_ckpts, tmp_path, quick_worker_shutdown):
    tok = transformers.AutoTokenizer.from_pretrained(guard_ckpts["llama"])
    model = transformers.AutoModelForCausalLM.from_pretrained(guard_ckpts["llama"])
    features = [dict(tok(f"w{i} w{i + 1} w{i + 2}")) for i in range(8)]
    features[3]["input_ids"] = features[3]["input_ids"][:2] + [-100]  # batch 1 (samples 2, 3): worker 1
    collate = hva.guard(model, tok, evidence_dir=tmp_path).wrap(transformers.DataCollatorWithPadding(tok))
    loader = DataLoader(features, batch_size=2, num_workers=2, collate_fn=collate)
    with pytest.raises(hva.BatchIndexError) as caught:
        for _ in loader:
            pass
    err = caught.value
    assert type(err) is hva.BatchIndexError and isinstance(err, IndexError)
    assert "DataLoader worker process 1" in str(err)
    assert (err.code, err.worker, err.batch, err.row, err.position, err.value) == ("HVA502", 1, 1, 1, 2, -100)
    assert "-100 (the loss ignore index) was copied into input_ids" in err.cause
    assert Path(err.evidence).name == "batch-rank0-worker1-000001-HVA502.safetensors" and Path(err.evidence).exists()
    del caught, err


def test_deferred_error_travels_from_a_worker_to_the_forward(guard_ckpts, tmp_path):
    """guard_trainer's mode: the worker's verdict rides in the batch and the forward pre-hook raises it."""
    tok = transformers.AutoTokenizer.from_pretrained(guard_ckpts["llama"])
    model = transformers.AutoModelForCausalLM.from_pretrained(guard_ckpts["llama"])
    features = [dict(tok(f"w{i} w{i + 1} w{i + 2}")) for i in range(8)]
    features[2]["input_ids"][0] = 104  # batch 1: worker 1
    collate = hva.guard(model, tok, evidence_dir=tmp_path).wrap_deferred(transformers.DataCollatorWithPadding(tok))
    raised = []
    for number, batch in enumerate(DataLoader(features, batch_size=2, num_workers=2, collate_fn=collate)):
        try:
            model(**batch)
        except hva.BatchIndexError as err:  # keep iterating: the workers then shut down cleanly
            raised.append((number, err.batch, err.worker, err.code, err.row, err.position, err.value))
    assert raised == [(1, 1, 1, "HVA501", 0, 0, 104)]


def test_two_gloo_ranks_bad_batch_on_rank_1_ends_the_job_in_seconds(guard_ckpts, tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
           "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
           "--max-restarts", "0", "--monitor-interval", "0.2", str(Path(__file__).with_name("dist_train.py")),
           str(guard_ckpts["llama"]), str(tmp_path / "evidence")]
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240, cwd=tmp_path)
    except subprocess.TimeoutExpired as exc:  # a hang: the collective never completes
        pytest.fail(f"the launcher hung: {exc.stderr!r}"[-3000:])
    elapsed, ended = time.monotonic() - start, time.time()
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-3000:]
    assert "rank 0 step 0 done" in out and "rank 1 step 0 done" in out  # both trained before the bad batch
    assert "rank 1 step 1 done" not in out
    assert "BatchIndexError: HVA501 in batch 1 (rank 1, main process)" in out, out[-3000:]
    assert [p.name for p in (tmp_path / "evidence").glob("*.safetensors")] == [
        "batch-rank1-workermain-000001-HVA501.safetensors"]
    raised = float(out.split("rank 1 raised at ")[1].split()[0])
    assert ended - raised < 20, ended - raised  # the job ends seconds after the bad batch, no hang
    # The whole run is bounded by process start-up (two torch + transformers imports on a shared 2-core machine), not by
    # the collective's 30-minute timeout.
    assert elapsed < 120, elapsed
