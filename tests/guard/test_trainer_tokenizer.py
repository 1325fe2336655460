"""``guard_trainer`` when the Trainer has no ``processing_class``: the tokenizer is found where the batches
are made (the collator), or the guard says once that it has none, and a batch error does not guess its cause."""

from __future__ import annotations

import pytest
import torch
import transformers

import hf_vocab_audit as hva
from hf_vocab_audit.guard.trainer import NO_TOKENIZER

from .test_trainer import features


def _pad_bug_checkpoint(tmp_path):
    from builders import checkpoint

    return checkpoint(tmp_path / "ckpt", "llama", rows=104, pad=None, model={"pad_token_id": None})


def _trainer(folder, tmp_path, collator_for, pass_tokenizer: bool = False, **guard_options):
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder)
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    tok.add_special_tokens({"pad_token": "<pad>"})  # the script's bug: no resize
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "out"), max_steps=4, per_device_train_batch_size=2, report_to=[], use_cpu=True,
        save_strategy="no", seed=0, disable_tqdm=True,
    )
    trainer = transformers.Trainer(model=model, args=args, train_dataset=features(tok), data_collator=collator_for(tok))
    assert trainer.processing_class is None
    if pass_tokenizer:
        guard_options["tokenizer"] = tok
    guard = hva.guard_trainer(trainer, evidence_dir=False, **guard_options)
    return trainer, guard, tok


def test_the_tokenizer_inside_the_collator_is_found_and_the_preflight_runs(tmp_path, capsys):
    folder = _pad_bug_checkpoint(tmp_path)
    trainer, guard, tok = _trainer(folder, tmp_path, lambda t: transformers.DataCollatorForLanguageModeling(t, mlm=False))
    assert guard.tokenizer is tok
    with pytest.raises(hva.PreflightError, match="HVA101"):  # as with processing_class=tok
        trainer.train()
    assert trainer.state.global_step == 0
    assert NO_TOKENIZER not in capsys.readouterr().err


def _closure_collator(tok):
    """A collator that pads with the tokenizer but does not expose it (a user's own function)."""
    def collate(rows):
        return transformers.DataCollatorForLanguageModeling(tok, mlm=False)(rows)
    return collate


def test_no_tokenizer_anywhere_is_said_once_and_the_batch_cause_does_not_guess(tmp_path, capsys):
    folder = _pad_bug_checkpoint(tmp_path)
    trainer, guard, _tok = _trainer(folder, tmp_path, _closure_collator)
    assert guard.tokenizer is None
    with pytest.raises(hva.BatchIndexError) as caught:
        trainer.train()
    err = capsys.readouterr().err
    assert err.count(NO_TOKENIZER) == 1
    message = str(caught.value)
    cause = next(line for line in message.splitlines() if "likely cause" in line)
    assert "not known" in cause and "tokenizer=tokenizer" in cause
    assert "pad id set to vocab_size" not in message  # the old guess, wrong here (a pad token added without resize)


def test_a_tokenizer_passed_explicitly_names_the_real_cause(tmp_path, capsys):
    folder = _pad_bug_checkpoint(tmp_path)
    trainer, guard, tok = _trainer(folder, tmp_path, _closure_collator, pass_tokenizer=True, preflight="warn")
    assert guard.tokenizer is tok
    with pytest.raises(hva.BatchIndexError, match="pad token '<pad>'"):
        trainer.train()
    err = capsys.readouterr().err
    assert "HVA101" in err and NO_TOKENIZER not in err
