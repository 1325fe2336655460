"""Which batches leave evidence, and how long it stays (issue 38 item 2).

Only the batch that failed leaves evidence: a prefetching loader (DataLoader workers, the Trainer's
accelerate loader) collates batches ahead of the model, and a bad batch behind the failing one never ran.
The folder keeps the evidence of the newest ``keep_runs`` runs: a failing run deletes the files of older
runs past that count, a healthy run touches nothing, and files that are not the guard's are never deleted.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
import torch
import transformers
from torch.utils.data import DataLoader

import hf_vocab_audit as hva
from hf_vocab_audit.guard.evidence import RUN_ENV

from .test_trainer import features, trainer_for


def evidence_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("*.safetensors")) if folder.is_dir() else []


def test_prefetched_bad_batches_behind_the_failing_one_leave_no_evidence(guard_ckpts, tmp_path):
    """Batches 1, 2 and 3 are bad; two workers with prefetch collate 2 and 3 before batch 1 reaches the model."""
    tok = transformers.AutoTokenizer.from_pretrained(guard_ckpts["llama"])
    model = transformers.AutoModelForCausalLM.from_pretrained(guard_ckpts["llama"])
    rows = [dict(tok(f"w{i} w{i + 1} w{i + 2}")) for i in range(12)]
    for sample in (2, 4, 6):  # batches 1, 2, 3
        rows[sample]["input_ids"][0] = 104
    collate = hva.guard(model, tok, evidence_dir=tmp_path).wrap_deferred(transformers.DataCollatorWithPadding(tok))
    loader = DataLoader(rows, batch_size=2, num_workers=2, prefetch_factor=2, collate_fn=collate)
    ran, raised = [], None
    for number, batch in enumerate(loader):
        try:
            model(**batch)
            ran.append(number)
        except hva.BatchIndexError as err:
            raised = err
            break
    del loader  # the workers, having collated batches 2 and 3, shut down
    assert ran == [0] and raised is not None and raised.batch == 1
    assert evidence_files(tmp_path) == ["batch-rank0-worker1-000001-HVA501.safetensors"]
    assert Path(raised.evidence) == tmp_path / "batch-rank0-worker1-000001-HVA501.safetensors"
    saved = json.loads(Path(raised.evidence).with_suffix(".json").read_text())
    assert saved["batch"] == 1 and saved["worker"] == 1 and saved["violations"][0]["value"] == 104
    # The evidence holds the collated batch's tensors and nothing the forward was given besides.
    from hf_vocab_audit.guard.evidence import read_evidence

    tensors, _ = read_evidence(Path(raised.evidence))
    assert sorted(tensors) == ["attention_mask", "input_ids"] and int(tensors["input_ids"][0, 0]) == 104


def test_a_trainer_run_with_workers_leaves_the_evidence_of_the_failing_step_only(guard_ckpts, tmp_path,
                                                                                  quick_worker_shutdown):
    """Every batch is bad: two workers collate up to four ahead while the first reaches the model."""
    trainer = trainer_for(guard_ckpts["llama"], tmp_path, _all_bad, guarded=True, workers=2)
    with pytest.raises(hva.BatchIndexError) as caught:
        trainer.train()
    err = caught.value
    assert err.batch == 0 and trainer.state.global_step == 0
    assert evidence_files(tmp_path / "evidence") == [Path(err.evidence).name]
    del caught, err


def _all_bad(tok) -> list[dict]:
    rows = features(tok)
    for row in rows:
        row["input_ids"][1] = 104  # one past the 104 rows
    return rows


def _fail(model, tok, folder: Path, number: int = 0, **options) -> Path:
    g = hva.guard(model, tok, evidence_dir=folder, **options)
    with pytest.raises(hva.BatchIndexError) as caught:
        g.check({"input_ids": torch.tensor([[5, 104]])}, batch_number=number)
    return Path(caught.value.evidence)


def _age(batch_file: Path, seconds: float) -> None:
    """Make a batch and its sidecar look ``seconds`` old (runs in a test follow each other within ms)."""
    then = time.time() - seconds
    for p in (batch_file, batch_file.with_suffix(".json")):
        os.utime(p, (then, then))


def test_the_folder_keeps_the_newest_runs_and_never_other_files(load_model, tmp_path, monkeypatch):
    monkeypatch.delenv(RUN_ENV, raising=False)
    model, folder = load_model("llama"), tmp_path / "ev"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    (folder / "batch-mine.safetensors").write_bytes(b"not the guard's")  # no sidecar of the guard's: kept
    stamps = []
    for run in range(5):
        batch_file = _fail(model, None, folder, run, keep_runs=3)  # shuffled data: another batch each run
        stamps.append(json.loads(batch_file.with_suffix(".json").read_text())["run"])
        _age(batch_file, 100 * (5 - run))
    left = {json.loads(p.read_text())["run"] for p in folder.glob("batch-*.json")}
    assert left == set(stamps[-3:])  # the newest three runs; the two oldest deleted with their sidecars
    assert len(evidence_files(folder)) == 3 + 1  # and the user's file
    assert (folder / "notes.txt").read_text() == "mine" and (folder / "batch-mine.safetensors").exists()
    # A healthy run writes nothing and deletes nothing.
    before = sorted(p.name for p in folder.iterdir())
    hva.guard(model, None, evidence_dir=folder, keep_runs=1).check({"input_ids": torch.tensor([[5, 103]])})
    assert sorted(p.name for p in folder.iterdir()) == before


def test_runs_are_counted_by_run_not_by_file(load_model, tmp_path, monkeypatch):
    """Distinct failures of one run all stay; a torchrun job's ranks share TORCHELASTIC_RUN_ID: one run."""
    model, folder = load_model("llama"), tmp_path / "ev"
    monkeypatch.setenv(RUN_ENV, "job-1")
    g = hva.guard(model, None, evidence_dir=folder, keep_runs=1)
    for number in range(3):
        with pytest.raises(hva.BatchIndexError):
            g.check({"input_ids": torch.tensor([[5, 104]])}, batch_number=number)
    monkeypatch.setenv("RANK", "1")
    _fail(model, None, folder, keep_runs=1)  # rank 1 of the same job
    assert len(evidence_files(folder)) == 4
    for batch_file in folder.glob("*.safetensors"):
        _age(batch_file, 60)
    monkeypatch.setenv(RUN_ENV, "job-2")
    monkeypatch.setenv("RANK", "0")
    newest = _fail(model, None, folder, 7, keep_runs=1)
    assert evidence_files(folder) == [newest.name]
    # keep_runs=None keeps everything.
    monkeypatch.setenv(RUN_ENV, "job-3")
    _fail(model, None, folder, 8, keep_runs=None)
    monkeypatch.setenv(RUN_ENV, "job-4")
    _fail(model, None, folder, 9, keep_runs=None)
    assert len(evidence_files(folder)) == 3
