"""The habits the repository keeps: CI lints and checks generated files, the help text says what it means."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def test_ci_runs_the_linters_and_the_generated_files_check():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "python -m mypy" in ci and "python -m ruff check ." in ci and "scripts/regenerate.py --check" in ci
    assert ci.rstrip().endswith("python -m pytest -q")  # the README's test command, last


def test_the_repository_pre_commit_hooks_run_the_same_tools_locally():
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    hooks = {h["id"]: h for repo in config["repos"] for h in repo["hooks"]}
    assert set(hooks) == {"ruff", "mypy", "regenerate"}
    assert all(repo["repo"] == "local" for repo in config["repos"])  # nothing fetched
    assert all(h["language"] == "system" and h["entry"].startswith("python ") for h in hooks.values())


def test_help_text_keeps_its_brackets_and_the_reference_has_no_html_entities(run_cli):
    code, out, _ = run_cli("check", "--help")
    assert code == 0 and "hf-vocab-audit[ray]" in out.replace("\n", "").replace(" ", "").replace("│", "")
    reference = (ROOT / "cli" / "reference.md").read_text()
    assert "&#x27;" not in reference and "'hf-vocab-audit[ray]'" in reference
