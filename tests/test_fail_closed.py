"""A gate that fails closed: it says what it examined and never passes what it did not (issue: fail closed).

Each case under the issue's "Why" runs through the command line as a user would run it in CI.
"""

from __future__ import annotations

import json
import shutil

import pytest
from builders import checkpoint

import hf_vocab_audit as hva

# A ChatML-style template over plain words: every id it renders is one the 104-row model has.
CHATML_PLAIN = ("{% for m in messages %}w1 {{ m['content'] }} w2\n{% endfor %}"
                "{% if add_generation_prompt %}w1 {% endif %}")


def _json(out: str) -> dict:
    return json.loads(out)


def test_a_folder_whose_config_is_empty_is_refused_in_one_line(tmp_path, run_cli):
    (tmp_path / "config.json").write_text("{}")
    code, out, err = run_cli("check", tmp_path)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert f"{tmp_path}: nothing to audit" in err and "no tokenizer" in err
    code, _, err = run_cli("check", tmp_path, "--allow-partial")  # nothing is nothing, partial or not
    assert code == 2 and "nothing to audit" in err


def test_a_sentence_transformers_module_folder_is_refused_and_named(tmp_path, run_cli):
    (tmp_path / "modules.json").write_text(json.dumps([{"idx": 0, "name": "0", "path": "", "type": "x"},
                                                       {"idx": 1, "name": "1", "path": "1_Pooling", "type": "y"}]))
    pooling = tmp_path / "1_Pooling"
    pooling.mkdir()
    (pooling / "config.json").write_text(json.dumps({"word_embedding_dimension": 384, "pooling_mode_mean_tokens": True}))
    code, _, err = run_cli("check", pooling)
    assert code == 2 and "nothing to audit" in err and "sentence-transformers module folder" in err


def test_a_healthy_checkpoint_passes_and_says_what_it_covered(tmp_path, run_cli):
    checkpoint(tmp_path, "llama", 104)
    code, out, _ = run_cli("check", tmp_path)
    assert code == 0 and "PASS" in out and "NOT EXAMINED" not in out
    assert "examined: tokenizer 104 ids" in out and "input embedding 104 rows" in out
    code, out, _ = run_cli("check", tmp_path, "--format", "json")
    cov = _json(out)["coverage"]
    assert cov["not_examined"] == [] and cov["tokenizer"]["ids"] == 104
    assert {t["role"] for t in cov["tensors"]} >= {"input embedding", "lm_head"}
    assert "vocab_size" in cov["config_keys"] and cov["rules_run"] > 0
    assert _json(out)["verdict"] == "PASS" and _json(out)["not_examined"] == 0


def test_weights_missing_fail_closed_and_allow_partial_says_partial(tmp_path, run_cli):
    checkpoint(tmp_path, "llama", 104)
    (tmp_path / "model.safetensors").unlink()
    code, out, _ = run_cli("check", tmp_path, "--format", "json")
    data = _json(out)
    assert code == 2 and data["verdict"] == "ERROR" and data["not_examined"] == 1
    gap = data["coverage"]["not_examined"][0]
    assert gap["what"] == "the weights (tensor headers)" and "HVA101" in gap["rules"]
    code, out, _ = run_cli("check", tmp_path, "--allow-partial")
    assert code == 0 and "PARTIAL" in out and "PASS" not in out and "NOT EXAMINED (1)" in out
    # The operator's settings file says the same as the flag; the flag wins over it. The model's own may not.
    (tmp_path / "hf-vocab-audit.toml").write_text("allow-partial = true\n")
    assert run_cli("check", tmp_path)[0] == 2
    assert run_cli("check", tmp_path, "--config", tmp_path / "hf-vocab-audit.toml")[0] == 0
    assert run_cli("check", tmp_path, "--config", tmp_path / "hf-vocab-audit.toml", "--no-allow-partial")[0] == 2


def test_allow_partial_never_hides_a_finding(tmp_path, run_cli):
    checkpoint(tmp_path, "llama", 104, added_special=["<a>", "<b>"])
    shutil.rmtree(tmp_path / "x", ignore_errors=True)
    code, out, _ = run_cli("check", tmp_path, "--select", "HVA101", "--allow-partial")
    assert code == 1 and "FAIL" in out


def test_the_tokenizer_missing_is_a_gap_with_the_rules_it_blocked(tmp_path):
    checkpoint(tmp_path, "llama", 104)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja"):
        (tmp_path / name).unlink(missing_ok=True)
    report = hva.audit(tmp_path)
    gaps = {g.what: g for g in report.coverage.not_examined}
    assert set(gaps) == {"the tokenizer"} and "HVA101" in gaps["the tokenizer"].rules
    assert report.exit_code() == 2 and report.exit_code(allow_partial=True) == 0
    assert report.judged(allow_partial=True).verdict().verdict == "PARTIAL"


def test_rules_that_do_not_apply_are_not_gaps(tmp_path):
    # Tied embeddings (no lm_head to check) and no chat template: skipped, yet a complete audit.
    checkpoint(tmp_path, "bert", 104)
    report = hva.audit(tmp_path)
    assert report.skipped and report.coverage.not_examined == ()
    assert report.exit_code() == 0


def test_a_classifier_dataset_whose_label_column_has_no_role_fails_closed(tmp_path, run_cli):
    model = checkpoint(tmp_path / "m", "bert-cls", 104)
    data = tmp_path / "cat.csv"
    data.write_text("sentence,category\n" + "".join(f"w{i} w{i + 1},{['pos', 'neg'][i % 2]}\n" for i in range(20)))
    code, out, _ = run_cli("check", model, "--dataset", data)
    assert code == 2 and "PASS" not in out
    assert "--label-column category" in out  # the hint names the label flag, not --text-column
    assert "20 row(s)" in out  # the text report says how many rows were scanned
    # Named, the column is read: the strings are not in label2id (transformers' LABEL_0/LABEL_1), a real finding.
    code, out, _ = run_cli("check", model, "--dataset", data, "--label-column", "category", "--format", "json")
    report = _json(out)
    assert code == 1 and {f["code"] for f in report["findings"]} >= {"HVA515"}
    assert report["coverage"]["not_examined"] == []
    split = report["coverage"]["datasets"][0]
    assert split["rows"] == 20 and {c["name"]: c["role"] for c in split["columns"]} == {
        "sentence": "text", "category": "class_label"}


def test_a_dataset_with_no_checked_column_fails_closed(tmp_path, run_cli):
    model = checkpoint(tmp_path / "m", "llama", 104)
    data = tmp_path / "meta.jsonl"
    data.write_text("".join(json.dumps({"meta": {"a": i}}) + "\n" for i in range(5)))
    code, out, _ = run_cli("check", model, "--dataset", data, "--select", "HVA5", "--format", "json")
    report = _json(out)
    assert code == 2 and report["verdict"] == "ERROR"
    assert any("no column" in g["what"] for g in report["coverage"]["not_examined"])


def test_a_chat_column_is_never_passed_unread(tmp_path, run_cli):
    """The data gate alone (--select HVA5) on conversational rows: read and judged, or not examined; never PASS."""
    model = checkpoint(tmp_path / "m", "llama", 104)
    data = tmp_path / "chat.jsonl"
    data.write_text("".join(json.dumps({"messages": [{"role": "user", "content": "w1 w2"},
                                                     {"role": "assistant", "content": "w3"}]}) + "\n"
                            for _ in range(5)))
    code, out, _ = run_cli("check", model, "--dataset", data, "--select", "HVA5", "--format", "json")
    report = _json(out)
    assert code != 0 and report["verdict"] in ("FAIL", "ERROR")  # no chat template here: nothing renders
    assert report["coverage"]["not_examined"] or report["summary"]["error"]
    # Once the template is there, the rows are read: rendered, tokenized and checked against the rows.
    model_chat = checkpoint(tmp_path / "mc", "llama", 104, chat_template=CHATML_PLAIN)
    code, out, _ = run_cli("check", model_chat, "--dataset", data, "--select", "HVA5", "--format", "json")
    report = _json(out)
    split = report["coverage"]["datasets"][0]
    assert code == 0 and report["verdict"] == "PASS" and split["tokens"] > 0
    assert [c["name"] for c in split["columns"]] == ["messages"]


@pytest.mark.parametrize("fmt", ["text", "markdown", "github", "sarif", "junit", "html"])
def test_every_format_says_what_was_not_examined(tmp_path, run_cli, fmt):
    checkpoint(tmp_path, "llama", 104)
    (tmp_path / "model.safetensors").unlink()
    code, out, _ = run_cli("check", tmp_path, "--format", fmt)
    assert code == 2 and "the weights (tensor headers)" in out
    code, out, _ = run_cli("check", tmp_path, "--format", fmt, "--allow-partial")
    assert code == 0 and "PARTIAL" in out


@pytest.mark.parametrize("problem, rows", [
    ("regression", [{"sentence1": "w1 w2", "sentence2": "w3", "label": x} for x in (0.5, 3.2, 4.8)]),
    ("multi_label_classification", [{"text": "w1 w2", "labels": x} for x in ([1.0, 0.0], [0.0, 1.0])]),
])
def test_float_labels_a_head_accepts_are_examined_not_gaps(tmp_path, run_cli, problem, rows):
    """Regression (num_labels=1) and multi-label (float vectors) targets have no class range: nothing to check,
    and the head trains on them (the loss runs on CPU), so the gate passes."""
    import torch
    import transformers

    labels = 1 if problem == "regression" else 2
    model_dir = checkpoint(tmp_path / "m", "bert-cls", 104, model={"num_labels": labels, "problem_type": problem})
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    model = transformers.AutoModelForSequenceClassification.from_pretrained(model_dir)
    key = "label" if problem == "regression" else "labels"
    target = torch.tensor([r[key] for r in rows], dtype=torch.float32)
    out = model(input_ids=torch.tensor([[5, 6]] * len(rows)), labels=target)
    assert torch.isfinite(out.loss)  # what the head does with these labels: a loss, no error
    code, out_text, _ = run_cli("check", model_dir, "--dataset", data)
    assert code == 0 and "PASS" in out_text and "NOT EXAMINED" not in out_text


def test_an_empty_data_file_is_refused_in_one_readable_line(tmp_path, run_cli):
    model = checkpoint(tmp_path / "m", "llama", 104)
    data = tmp_path / "empty.jsonl"
    data.write_text("")
    code, out, err = run_cli("check", model, "--dataset", data)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "empty.jsonl: holds no rows to scan" in err and "StopIteration" not in err
