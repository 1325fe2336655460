"""``guard_trainer`` on real transformers ``Trainer`` runs (CPU, a few steps)."""

from __future__ import annotations

import pytest
import torch
import transformers

import hf_vocab_audit as hva


def features(tok, bad_at: int | None = None) -> list[dict]:
    rows = [dict(tok(" ".join(f"w{(i * 7 + j) % 90}" for j in range(3 + i % 4)))) for i in range(16)]
    if bad_at is not None:
        rows[bad_at]["input_ids"][1] = 104  # one past the 104 rows
    return rows


def trainer_for(ckpt, tmp_path, data, *, guarded: bool, workers: int = 0, **guard_options):
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_pretrained(ckpt)
    tok = transformers.AutoTokenizer.from_pretrained(ckpt)
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "out"), max_steps=6, per_device_train_batch_size=2, logging_steps=1,
        learning_rate=1e-2, report_to=[], use_cpu=True, save_strategy="no", seed=0, disable_tqdm=True,
        dataloader_num_workers=workers,
    )
    trainer = transformers.Trainer(model=model, args=args, train_dataset=data(tok), processing_class=tok,
                                   data_collator=transformers.DataCollatorForLanguageModeling(tok, mlm=False))
    if guarded:
        hva.guard_trainer(trainer, evidence_dir=tmp_path / "evidence", **guard_options)
    return trainer


@pytest.mark.parametrize("workers", [0, 2])
def test_bad_batch_stops_training_at_the_step_that_would_crash(guard_ckpts, tmp_path, workers, quick_worker_shutdown):
    data = lambda tok: features(tok, bad_at=9)  # noqa: E731
    plain = trainer_for(guard_ckpts["llama"], tmp_path / "plain", data, guarded=False, workers=workers)
    with pytest.raises(IndexError, match="index out of range in self") as crash:
        plain.train()
    assert not isinstance(crash.value, hva.BatchIndexError)
    crashed_at = plain.state.global_step
    assert 0 < crashed_at < 6

    guarded = trainer_for(guard_ckpts["llama"], tmp_path / "guarded", data, guarded=True, workers=workers)
    with pytest.raises(hva.BatchIndexError) as caught:
        guarded.train()
    assert guarded.state.global_step == crashed_at  # same steps completed, then the guard's error
    err = caught.value
    assert (err.code, err.key, err.value, err.limit, err.batch) == ("HVA501", "input_ids", 104, 104, crashed_at)
    assert err.worker == (None if workers == 0 else crashed_at % workers)
    del crash, caught, err
    assert (tmp_path / "guarded" / "evidence").is_dir()


def test_healthy_run_is_bitwise_identical_with_and_without_the_guard(guard_ckpts, tmp_path):
    runs = []
    for guarded in (False, True):
        trainer = trainer_for(guard_ckpts["llama"], tmp_path / str(guarded), features, guarded=guarded)
        trainer.train()
        losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
        runs.append((losses, {k: v.detach().clone() for k, v in trainer.model.state_dict().items()}))
    (plain_losses, plain_state), (guarded_losses, guarded_state) = runs
    assert len(plain_losses) == 6 and plain_losses == guarded_losses
    assert all(torch.equal(plain_state[k], guarded_state[k]) for k in plain_state)


def test_preflight_runs_at_train_begin_and_fails_like_check(tmp_path):
    from builders import checkpoint

    folder = checkpoint(tmp_path / "ckpt", "llama", rows=104, pad=None, model={"pad_token_id": None})

    def data(tok):
        tok.add_special_tokens({"pad_token": "<pad>"})  # the script's bug: no resize
        return features(tok)

    trainer = trainer_for(folder, tmp_path, data, guarded=True)
    with pytest.raises(hva.PreflightError, match="HVA101"):
        trainer.train()
    assert trainer.state.global_step == 0
    # "warn" prints the report and lets the batch check stop the run at the first padded batch.
    trainer = trainer_for(folder, tmp_path / "warn", data, guarded=True, preflight="warn")
    with pytest.raises(hva.BatchIndexError, match="pad token '<pad>'"):
        trainer.train()
