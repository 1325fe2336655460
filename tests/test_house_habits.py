"""The habits the repository keeps: CI lints and checks generated files, the help text says what it means."""

from __future__ import annotations

from pathlib import Path

import tomllib
import yaml

ROOT = Path(__file__).resolve().parents[1]


def readme_setup_commands() -> list[str]:
    """The commands of the README's "Set-up on a fresh machine" section: indented code lines."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Set-up on a fresh machine\n", 1)[1].split("\n## ", 1)[0]
    return [line.strip() for line in section.splitlines() if line.startswith("    ")]


def test_ci_runs_the_linters_and_the_generated_files_check():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "python -m mypy" in ci and "python -m ruff check ." in ci and "scripts/regenerate.py --check" in ci
    demo, tests = readme_setup_commands()
    assert demo == "pip install -c constraints.txt -e . && hf-vocab-audit demo"
    install, run = tests.split(" && ")
    assert install == "pip install -c constraints.txt -e '.[test]'"
    assert ci.rstrip().endswith(run)  # the README's test command, last
    assert "python -m pip install -q -c constraints.txt -e '.[test,docs]'" in ci  # its install, and the docs extra


def test_ci_builds_the_docs_site_strictly_with_a_pinned_mkdocs():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "python -m mkdocs build --strict" in ci
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["optional-dependencies"]["docs"] == ["mkdocs>=1.6"]
    pins = (ROOT / "constraints.txt").read_text().splitlines()
    assert "mkdocs==1.6.1" in pins and "Markdown==3.11.4" in pins


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
