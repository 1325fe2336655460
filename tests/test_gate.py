"""Exit codes of `check`: --fail-on x the severities present x --exit-zero, and several outputs per run."""

from __future__ import annotations

import json

import pytest
from builders import checkpoint, edit_json

from hf_vocab_audit.demo import build_demo_checkpoint


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """Checkpoints whose worst finding is error, warning, info, or nothing."""
    root = tmp_path_factory.mktemp("levels")
    error = build_demo_checkpoint(root / "error")
    warning = checkpoint(root / "warning", "llama", 104)
    edit_json(warning / "config.json", eos_token_id=3)  # disagrees with the tokenizer's eos (2): HVA202
    info = checkpoint(root / "info", "llama", 128, tokenizer_vocab=104)  # padded rows: HVA105 info
    clean = checkpoint(root / "clean", "llama", 104)
    return {"error": error, "warning": warning, "info": info, "none": clean}


def worst(run_cli, folder) -> str:
    _, out, _ = run_cli("check", folder, "--format", "json", "--exit-zero")
    counts = json.loads(out)["summary"]
    return next((s for s in ("error", "warning", "info") if counts[s]), "none")


def test_fixture_levels(models, run_cli):
    assert {level: worst(run_cli, folder) for level, folder in models.items()} == {
        "error": "error", "warning": "warning", "info": "info", "none": "none"}


RANK = {"none": 0, "info": 1, "warning": 2, "error": 3}


@pytest.mark.parametrize("exit_zero", [False, True])
@pytest.mark.parametrize("fail_on", ["error", "warning", "info", "never"])
@pytest.mark.parametrize("level", ["error", "warning", "info", "none"])
def test_exit_code_matrix(models, run_cli, level, fail_on, exit_zero):
    args = ["check", models[level], "--fail-on", fail_on, "--format", "json"] + (["--exit-zero"] if exit_zero else [])
    code, out, err = run_cli(*args)
    assert not err
    fails = fail_on != "never" and RANK[level] >= RANK[fail_on]
    assert code == (0 if exit_zero or not fails else 1), err
    assert json.loads(out)["fail_on"] == fail_on


def test_exit_zero_still_exits_2_on_bad_input(run_cli, tmp_path):
    code, _, err = run_cli("check", tmp_path / "missing", "--exit-zero")
    assert code == 2 and "does not exist" in err


def test_first_format_to_stdout_the_rest_to_files(models, run_cli, tmp_path):
    sarif, md = tmp_path / "a.sarif", tmp_path / "a.md"
    code, out, _ = run_cli("check", models["error"], "--format", "text", "--format", "sarif", "--format", "markdown",
                             "--output-file", sarif, "--output-file", md)
    assert code == 1
    assert out.startswith("hf-vocab-audit ") and "FAIL 5 error(s)" in out
    assert json.loads(sarif.read_text())["version"] == "2.1.0"
    assert md.read_text().startswith("## ❌ hf-vocab-audit FAIL")


def test_one_file_per_format_and_text_files_have_no_colour(models, run_cli, tmp_path):
    txt, js = tmp_path / "r.txt", tmp_path / "r.json"
    code, out, _ = run_cli("check", models["error"], "--format", "text", "--format", "json",
                           "--output-file", txt, "--output-file", js)
    assert code == 1 and out == ""
    assert "\x1b[" not in txt.read_text() and json.loads(js.read_text())["summary"]["error"] == 5


def test_mismatched_formats_and_files_exit_2(models, run_cli, tmp_path):
    code, _, err = run_cli("check", models["error"], "--format", "json", "--format", "sarif", "--format", "junit",
                           "--output-file", tmp_path / "x")
    assert code == 2 and "3 --format option(s) and 1 --output-file option(s)" in err
