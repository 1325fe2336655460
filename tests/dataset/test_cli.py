"""`check MODEL_DIR --dataset SPEC`: exit codes, JSON report, one-line errors."""

from __future__ import annotations

import json

from dataset_builders import write_jsonl


def test_cli_dataset_finding_exit_1_and_json(run_cli, bert_cls, tmp_path):
    data = write_jsonl(tmp_path / "t.jsonl", [{"text": "w1", "label": v} for v in (0, 1, 3)])
    code, out, _ = run_cli("check", bert_cls, "--dataset", data, "--format", "json", "--batch-size", "2")
    assert code == 1
    report = json.loads(out)
    (f,) = [f for f in report["findings"] if f["code"] == "HVA510"]
    assert f["location"] == {"file": str(data), "split": "train", "column": "label", "row": 2}
    assert report["dataset"]["splits"][0]["columns"]["label"]["unique_values"][-1] == {"value": 3, "count": 1}


def test_cli_clean_dataset_exit_0_and_text_mentions_nothing_failing(run_cli, bert_cls, tmp_path):
    data = write_jsonl(tmp_path / "t.jsonl", [{"text": "w1", "label": v} for v in (0, 1, 2)])
    code, out, _ = run_cli("check", bert_cls, "--dataset", data, "--select", "HVA5")
    assert code == 0 and "PASS" in out


def test_cli_bad_dataset_is_one_line_exit_2(run_cli, bert_cls, tmp_path):
    code, _, err = run_cli("check", bert_cls, "--dataset", tmp_path / "missing.jsonl")
    assert code == 2
    assert err.strip().count("\n") == 0 and "does not exist" in err
    data = write_jsonl(tmp_path / "t.jsonl", [{"text": "w1"}])
    code, _, err = run_cli("check", bert_cls, "--dataset", data, "--label-column", "label")
    assert code == 2 and "--label-column 'label'" in err
