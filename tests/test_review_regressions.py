"""Regression tests for problems an independent review found across modules."""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
from builders import checkpoint, edit_json

from hf_vocab_audit import audit
from hf_vocab_audit.core.findings import Severity


def codes(report):
    return {f.code for f in report.findings}


def _mllama(folder, extra):
    """Llama-3.2-Vision's text side: embed_tokens has vocab_size + 8 rows, lm_head vocab_size rows."""
    from safetensors.numpy import save_file

    checkpoint(folder, "llama", 104)
    config = json.loads((folder / "config.json").read_text())
    text = {k: config.pop(k) for k in list(config) if k not in ("architectures", "model_type")}
    config.update(model_type="mllama", architectures=["MllamaForConditionalGeneration"], text_config=text)
    (folder / "config.json").write_text(json.dumps(config))
    save_file({"language_model.model.embed_tokens.weight": np.zeros((104 + extra, 4), np.float32),
               "language_model.lm_head.weight": np.zeros((104, 4), np.float32)}, str(folder / "model.safetensors"))


def test_mllama_extra_rows_are_by_design(tmp_path):
    _mllama(tmp_path, 8)
    report = audit(tmp_path)
    assert not {"HVA103", "HVA104"} & codes(report)


def test_mllama_other_row_counts_still_fire(tmp_path):
    _mllama(tmp_path, 3)
    found = codes(audit(tmp_path))
    assert {"HVA103", "HVA104"} <= found


def test_float_labels_are_skipped_not_errors(bert_cls, tmp_path):
    from dataset_builders import write_jsonl

    data = write_jsonl(tmp_path / "train.jsonl", [{"text": "w1 w2", "label": 0.5}, {"text": "w3", "label": 1.0}])
    report = audit(bert_cls, datasets=[str(data)])
    assert not [f for f in report.findings if f.severity is Severity.ERROR]
    (split,) = report.to_dict()["dataset"]["splits"]
    assert any(s["column"] == "label" and "regression" in s["reason"] for s in split["skipped_columns"])


def test_fix_with_dataset_is_refused(tmp_path, run_cli):
    checkpoint(tmp_path / "m", "llama", 104)
    (tmp_path / "d.jsonl").write_text('{"input_ids": [1, 2]}\n')
    code, _, err = run_cli("check", tmp_path / "m", "--fix", "--dataset", tmp_path / "d.jsonl")
    assert code == 2 and "--dataset cannot be combined with --fix" in err
    assert not (tmp_path / "m-fixed").exists()


def test_slow_tokenizer_fallback_leaves_the_environment_alone(minilm_dir, tmp_path, monkeypatch):
    from hf_vocab_audit.facts.tokenizer.folder import load_tokenizer

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    for name in ("vocab.txt", "tokenizer_config.json", "special_tokens_map.json", "config.json"):
        shutil.copy(minilm_dir / name, tmp_path / name)
    assert load_tokenizer(tmp_path).source == "transformers"
    assert "HF_HUB_OFFLINE" not in os.environ


def test_fix_leaves_allowlisted_findings_alone(tmp_path, run_cli):
    checkpoint(tmp_path / "m", "llama", 104)
    edit_json(tmp_path / "m" / "generation_config.json", eos_token_id=[5, 6])
    (tmp_path / "gate.toml").write_text(
        '[[allow]]\ncode = "HVA202"\nreason = "generation stops on 5 or 6 by design"\n')
    code, out, err = run_cli("check", tmp_path / "m", "--fix", "--unsafe-fixes", "--verify-load", "never",
                             "--format", "json", "--config", tmp_path / "gate.toml")
    assert code == 0, err
    fixed = json.loads((tmp_path / "m-fixed" / "generation_config.json").read_text())
    assert fixed["eos_token_id"] == [5, 6]
    assert not json.loads(out)["fixes"]


def test_demo_refuses_a_non_empty_folder(tmp_path, run_cli):
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")
    code, _, err = run_cli("demo", "--keep", tmp_path / "model")
    assert code == 2 and "needs a new or empty folder" in err
    assert (tmp_path / "model" / "config.json").read_text() == "{}"


def test_mistyped_local_path_says_so(tmp_path, run_cli, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli("check", "models/brokn")
    assert code == 2 and "no local folder 'models/brokn' exists" in err


def test_fix_output_must_not_replace_the_tokenizer_folder(tmp_path, run_cli):
    checkpoint(tmp_path / "m", "llama", 104, added=["extra"])
    shutil.copytree(tmp_path / "m", tmp_path / "tok")
    code, _, err = run_cli("check", tmp_path / "m", "--tokenizer", tmp_path / "tok", "--fix", "--output",
                           tmp_path / "tok", "--force")
    assert code == 2 and "must not be the tokenizer folder" in err
    assert (tmp_path / "tok" / "tokenizer.json").exists()
