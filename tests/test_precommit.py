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


def test_the_hook_never_takes_the_gates_settings_from_a_model(tmp_path, monkeypatch, capsys):
    """A model folder's own hf-vocab-audit.toml, and the repository's pyproject.toml when the repository root is
    the model (a Hub model repository with the hook), may only make the gate stricter; --config is obeyed."""
    monkeypatch.chdir(tmp_path)
    build_demo_checkpoint(tmp_path / "models" / "bad")
    (tmp_path / "models" / "bad" / "hf-vocab-audit.toml").write_text('exit-zero = true\nfail-on = "never"\n')
    assert main(["models/bad/hf-vocab-audit.toml"]) == 1
    assert "HVA003 target-settings-ignored" in capsys.readouterr().out
    (tmp_path / "gate.toml").write_text("exit-zero = true\n")
    assert main(["--config", "gate.toml", "models/bad/config.json"]) == 0

    repo = build_demo_checkpoint(tmp_path / "model-repo")
    (repo / "pyproject.toml").write_text('[tool.hf-vocab-audit]\nexit-zero = true\nignore = ["HVA1", "HVA2"]\n')
    monkeypatch.chdir(repo)
    assert model_folders(["config.json"]) == [Path(".")]
    assert main(["config.json"]) == 1
    assert "pyproject.toml (the target's own settings) sets exit-zero, ignore" in capsys.readouterr().out


def test_the_shipped_workflows_command_fails_a_model_that_brings_settings_to_pass(tmp_path, monkeypatch, run_cli):
    """The workflow's own `check` line, run as the workflow runs it (from the repository root), on a broken
    model whose hf-vocab-audit.toml asks for a pass: the job fails."""
    import shlex

    import yaml

    workflow = yaml.safe_load((ROOT / "cli" / "github-action" / "model-gate.yml").read_text())
    (step,) = [s for s in workflow["jobs"]["hf-vocab-audit"]["steps"] if s.get("id") == "audit"]
    command = step["run"].replace("\\\n", " ").split("hf-vocab-audit check", 1)[1].split("\n", 1)[0]
    args = shlex.split(command)
    assert args[0] == "$MODEL_DIR" and "--output-file" in args
    monkeypatch.chdir(tmp_path)
    build_demo_checkpoint(tmp_path / "models" / "my-model")
    (tmp_path / "models" / "my-model" / "hf-vocab-audit.toml").write_text(
        'exit-zero = true\nfail-on = "never"\nselect = ["HVA002"]\n[[allow]]\ncode = "HVA101"\nreason = "x"\n')
    code, out, err = run_cli("check", "models/my-model", *args[1:])
    assert code == 1, err
    assert "HVA003" in (tmp_path / "hf-vocab-audit.md").read_text()


def test_the_hook_takes_checks_declarations_of_its_flags():
    """--fail-on, --exit-zero/--no-exit-zero and --config mean in the hook what they mean in check: the same
    declaration (choices, help), never a second copy that drifts."""
    import argparse

    from hf_vocab_audit import precommit
    from hf_vocab_audit.core.options import BY_KEY

    parser = argparse.ArgumentParser()
    for key in precommit.HOOK_OPTIONS:
        precommit._add(parser, BY_KEY[key])
    by_flag = {a.option_strings[0]: a for a in parser._actions if a.option_strings}
    assert by_flag["--fail-on"].choices == BY_KEY["fail-on"].choice_values
    assert all(by_flag[f"--{k}"].help == BY_KEY[k].help for k in precommit.HOOK_OPTIONS)
    assert "--no-exit-zero" in by_flag["--exit-zero"].option_strings
    args = parser.parse_args(["--no-exit-zero", "--fail-on", "warning"])
    assert args.exit_zero is False and args.fail_on == "warning" and args.config is None
    source = Path(precommit.__file__).read_text(encoding="utf-8")
    assert '"--fail-on"' not in source and '"--exit-zero"' not in source and '"--config"' not in source
