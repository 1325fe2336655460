"""The pre-commit entry point and the shipped CI files (validated by real validators)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from builders import checkpoint

from hf_vocab_audit.demo import build_demo_checkpoint
from hf_vocab_audit.precommit import main, model_folders

ROOT = Path(__file__).resolve().parents[1]


def test_changed_files_map_to_their_model_folders(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    checkpoint(tmp_path / "models" / "good", "llama", 104)
    build_demo_checkpoint(tmp_path / "models" / "bad")
    (tmp_path / "README.md").write_text("x")
    files = ["models/good/config.json", "models/bad/tokenizer.json", "models/bad/model.safetensors", "README.md"]
    assert model_folders(files) == [Path("models/good"), Path("models/bad")]
    assert main(["models/good/config.json"]) == 0
    assert main(files) == 1
    assert main(["--exit-zero", *files]) == 0
    assert main(["README.md"]) == 0


def test_pre_commit_manifest_is_valid():
    from pre_commit.clientlib import load_manifest

    (hook,) = load_manifest(str(ROOT / ".pre-commit-hooks.yaml"))
    assert hook["entry"] == "hf-vocab-audit-pre-commit" and hook["language"] == "python"
    import re

    pattern = re.compile(hook["files"])
    for name in ("m/config.json", "m/model-00001-of-00002.safetensors", "tokenizer_config.json",
                 "a/adapter_config.json", "a/adapter_model.safetensors", "m/processor_config.json", "m/source.spm"):
        assert pattern.search(name), name
    assert not pattern.search("src/app.py")


def test_github_workflow_is_valid():
    workflow = ROOT / "cli" / "github-action" / "model-gate.yml"
    proc = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows", str(workflow)],
        capture_output=True, text=True, check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = workflow.read_text()
    assert "github/codeql-action/upload-sarif" in text and "GITHUB_STEP_SUMMARY" in text
    assert "--format github --format sarif --format markdown" in text


def test_adapter_folders_are_audited_against_their_base(tmp_path, monkeypatch):
    from family_builders import adapter

    monkeypatch.chdir(tmp_path)
    base = checkpoint(tmp_path / "models" / "base", "llama", 104)
    adapter(base, tmp_path / "adapters" / "tool", tokens=["<tool>"])  # tokens without saved rows: HVA803
    files = ["adapters/tool/adapter_config.json", "adapters/tool/adapter_model.safetensors"]
    assert model_folders(files) == [Path("adapters/tool")]
    assert main(files) == 1
