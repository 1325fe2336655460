"""Root causes: the findings one mistake explains are grouped under it, with its one fix; the cause's claim
(what breaks) is checked by running the model on CPU."""

from __future__ import annotations

import json

import pytest
import torch
import transformers
from builders import checkpoint, edit_json
from dataset_builders import write_jsonl

import hf_vocab_audit as hva
from hf_vocab_audit.demo import NEXT_STEPS, build_demo_checkpoint, run_demo


def _causes(report):
    return {c.id: c for c in report.causes}


def test_one_missing_resize_is_one_cause_and_the_model_crashes_as_it_says(tmp_path, run_cli):
    folder = build_demo_checkpoint(tmp_path / "demo")
    report = hva.audit(folder)
    (cause,) = report.causes
    assert cause.id == "tokens-added-without-resize" and cause.findings == 5
    assert set(cause.codes) == {"HVA101", "HVA102", "HVA201", "HVA206"}
    assert "'<|im_start|>', '<|im_end|>' (ids 259..260)" in cause.story and "--fix" in cause.fix
    explained = [f.code for f in report.findings if f.cause == cause.id]
    alone = [f.code for f in report.findings if f.cause is None]
    assert sorted(explained) == ["HVA101", "HVA102", "HVA201", "HVA206", "HVA206"] and alone == ["HVA202"]
    # What the cause says breaks does break: the added id indexes past the embedding on CPU.
    model = transformers.AutoModelForCausalLM.from_pretrained(folder)
    with pytest.raises(IndexError, match="index out of range in self"):
        model(torch.tensor([[5, 259]]))
    # check's text report leads with it: cause, story, fix, then the evidence.
    code, out, _ = run_cli("check", folder)
    assert code == 1
    head = out.split("ERRORS (")[0]
    assert f"CAUSE: {cause.title}" in head and cause.story in head and cause.fix in head
    assert out.count("cause: tokens-added-without-resize") == 5


def test_the_demo_tells_the_story_check_tells(capsys):
    assert run_demo() == 0
    out = capsys.readouterr().out
    report_part, _, summary = out.partition("What happened: ")
    story = summary.split("\n\nWhat to do next:")[0].replace("\n", " ")
    assert f"  {story}" in report_part  # the same words under the report's CAUSE line
    assert NEXT_STEPS.splitlines()[1].startswith("What happened")


def test_the_five_error_trainer_preflight_is_one_cause(tmp_path):
    """A tiny Trainer run whose script added a pad token without a resize (and synced the pad id into the
    model's config and generation config): five errors in the preflight, one cause, the code that fixes it."""
    from tests.guard.test_trainer import features

    folder = checkpoint(tmp_path / "ckpt", "llama", rows=104, pad=None, model={"pad_token_id": None})
    model = transformers.AutoModelForCausalLM.from_pretrained(folder)
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    tok.add_special_tokens({"pad_token": "<pad>"})  # the script's bug: no resize ...
    model.config.pad_token_id = model.generation_config.pad_token_id = tok.pad_token_id  # ... and synced
    args = transformers.TrainingArguments(output_dir=str(tmp_path / "out"), max_steps=2, per_device_train_batch_size=2,
                                          report_to=[], use_cpu=True, save_strategy="no", disable_tqdm=True)
    trainer = transformers.Trainer(model=model, args=args, train_dataset=features(tok), processing_class=tok,
                                   data_collator=transformers.DataCollatorForLanguageModeling(tok, mlm=False))
    hva.guard_trainer(trainer, evidence_dir=False)
    with pytest.raises(hva.PreflightError) as caught:
        trainer.train()
    report = caught.value.report
    assert sorted(f.code for f in report.findings) == ["HVA101", "HVA102", "HVA201", "HVA201", "HVA201"]
    (cause,) = report.active_causes()
    assert cause.findings == 5 and cause.title.startswith("the token '<pad>' added to the tokenizer")
    assert cause.fix.startswith("model.resize_token_embeddings(len(tokenizer))")  # code, not a CLI flag
    files = {f.location.file for f in report.findings}
    assert files <= {"<model>", "<tokenizer>", "<model>.config", "<model>.generation_config"}
    assert str(report).count("CAUSE:") == 1


def test_a_pad_id_set_to_the_row_count_is_its_own_cause(tmp_path):
    folder = checkpoint(tmp_path / "m", "llama", rows=104)
    edit_json(folder / "config.json", pad_token_id=104)
    report = hva.audit(folder)
    causes = _causes(report)
    assert set(causes) == {"special-id-past-rows-104"}
    assert [f.code for f in report.findings if f.cause] == ["HVA201"]
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        transformers.AutoModelForCausalLM.from_pretrained(folder)  # what such a config does to a model


def test_a_hand_edited_vocab_size_is_one_cause(tmp_path):
    folder = checkpoint(tmp_path / "m", "llama", rows=104)
    edit_json(folder / "config.json", vocab_size=120)
    report = hva.audit(folder)
    assert set(_causes(report)) == {"config-vocab-size-edited"}
    assert "120" in report.causes[0].title and "104" in report.causes[0].fix
    with pytest.raises(RuntimeError, match="ignore_mismatched_sizes"):
        transformers.AutoModelForCausalLM.from_pretrained(folder)


def test_one_based_labels_are_one_cause_with_the_map_that_fixes_them(bert_cls, tmp_path):
    data = write_jsonl(tmp_path / "t.jsonl", [{"text": "w1", "label": v} for v in (1, 2, 3, 1, 3, 2)])
    report = hva.audit(bert_cls, datasets=[str(data)], select=["HVA5"])
    cause = _causes(report)["labels-one-based-label"]
    assert "HVA511" in cause.codes and cause.fix == "ds = ds.map(lambda r: {'label': r['label'] - 1})"
    model = transformers.AutoModelForSequenceClassification.from_pretrained(bert_cls)
    labels = torch.tensor([1, 2, 3])
    with pytest.raises(IndexError, match="Target 3 is out of bounds"):
        model(input_ids=torch.tensor([[5, 6]] * 3), labels=labels)
    model(input_ids=torch.tensor([[5, 6]] * 3), labels=labels - 1)  # the fix: the loss runs


def test_a_healthy_checkpoint_has_no_cause_and_causes_are_stable(tmp_path):
    folder = checkpoint(tmp_path / "ok", "llama", rows=104)
    assert hva.audit(folder).causes == ()
    broken = build_demo_checkpoint(tmp_path / "demo")
    first, second = (json.loads(hva.render(hva.audit(broken), "json")) for _ in range(2))
    assert first["causes"] == second["causes"] and first["causes"]
    assert [f.get("cause") for f in first["findings"]] == [f.get("cause") for f in second["findings"]]


def test_sarif_and_junit_keep_one_result_per_finding_each_naming_its_cause(tmp_path):
    report = hva.audit(build_demo_checkpoint(tmp_path / "demo"))
    sarif = json.loads(hva.render(report, "sarif"))
    results = sarif["runs"][0]["results"]
    assert len(results) == len(report.findings)
    assert sum(r["properties"].get("cause") == "tokens-added-without-resize" for r in results) == 5
    assert "cause (tokens-added-without-resize)" in hva.render(report, "junit")


def test_another_models_tokenizer_is_told_apart_from_added_tokens(tmp_path):
    folder = checkpoint(tmp_path / "mixed", "llama", 104, tokenizer_vocab=106, added=["<x1>", "<x2>"])
    (cause,) = hva.audit(folder).causes
    assert cause.id == "tokenizer-larger-than-model"
    assert "ids 104..105 ('w100', 'w101') are in the tokenizer's own vocabulary" in cause.story
    assert "2 added token(s) ('<x1>', '<x2>') have no row either" in cause.story
    model = transformers.AutoModelForCausalLM.from_pretrained(folder)
    with pytest.raises(IndexError, match="index out of range in self"):
        model(torch.tensor([[5, 104]]))  # a base-vocabulary id of the larger tokenizer
