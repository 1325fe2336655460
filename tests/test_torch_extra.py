"""torch is an extra (``hf-vocab-audit[torch]``): without it the static check, ``--dataset`` and ``--fix`` on
safetensors run and report exactly what they report with it; every path that needs torch (a ``.bin``
checkpoint or adapter, the transformers repair route, ``--verify-load always``, ``repro``, ``demo --guard``,
the guard's Python API) stops with one line naming the extra, exit 2, never a traceback and never a PASS.

torch is hidden from a fresh interpreter the way a missing package looks to ``import`` and to
``importlib.util.find_spec`` (``sys.modules["torch"] = None``), so transformers and datasets also see no torch.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib
from builders import checkpoint, edit_json
from dataset_builders import write_jsonl
from family_builders import adapter

from hf_vocab_audit.errors import torch_extra

ROOT = Path(__file__).resolve().parent.parent

HIDE_TORCH = """
import sys
sys.modules["torch"] = None  # import torch -> ModuleNotFoundError; find_spec("torch") -> None
sys.argv = ["hf-vocab-audit", *sys.argv[1:]]
try:
    from hf_vocab_audit.cli import main
    main()
finally:
    assert sys.modules.get("torch") is None, "torch was imported"
"""


def run_without_torch(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", HIDE_TORCH, *map(str, args)], capture_output=True, text=True,
                          timeout=300, cwd=cwd)


def assert_asks_for_the_extra(proc: subprocess.CompletedProcess[str], needed_for: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "PASS" not in proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert needed_for in lines[0] and torch_extra() in lines[0]


@pytest.fixture(scope="module")
def broken(tmp_path_factory):
    """A safetensors checkpoint whose tokenizer is 3 tokens longer than its embedding (HVA101)."""
    return checkpoint(tmp_path_factory.mktemp("broken"), "llama", 104, tokenizer_vocab=107)


def test_torch_is_an_extra_not_a_base_dependency():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = [d.split(">")[0].split("=")[0].split("[")[0].strip() for d in project["dependencies"]]
    assert "torch" not in names
    assert any(d.startswith("torch") for d in project["optional-dependencies"]["torch"])
    assert any(d.startswith("torch") for d in project["optional-dependencies"]["test"])  # the suite runs every path


def test_check_and_dataset_without_torch_report_what_they_report_with_it(broken, tmp_path, run_cli):
    data = write_jsonl(tmp_path / "train.jsonl", [{"input_ids": [1, 2, 105], "labels": [1, 2, 3]},
                                                  {"input_ids": [1, 2, 3], "labels": [1, 2, 3]}])
    args = ("check", broken, "--dataset", data, "--format", "json")
    proc = run_without_torch(*args)
    assert proc.returncode == 1, proc.stderr
    code, out, _ = run_cli(*args)
    assert code == 1

    def findings(text: str) -> list[tuple[str, str]]:
        return sorted((f["code"], f["message"]) for f in json.loads(text)["findings"])

    assert findings(proc.stdout) == findings(out)
    assert {"HVA101"} <= {c for c, _ in findings(out)}


def test_fix_on_safetensors_without_torch_writes_and_verifies(broken, tmp_path):
    out = tmp_path / "fixed"
    proc = run_without_torch("check", broken, "--fix", "--output", out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (out / "model.safetensors").is_file()
    assert f"--verify-load: skipped: PyTorch is not installed ({torch_extra()}" in proc.stdout
    assert run_without_torch("check", out).returncode == 0


def test_fix_routes_that_load_with_transformers_ask_for_the_extra(broken, tmp_path):
    for i, extra in enumerate((["--method", "transformers"], ["--verify-load", "always"])):
        out = tmp_path / f"fixed{i}"
        proc = run_without_torch("check", broken, "--fix", "--output", out, *extra)
        assert_asks_for_the_extra(proc, "loading the checkpoint with transformers")
        assert not out.exists()
        assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary folder left


def test_bin_checkpoint_asks_for_the_extra(tmp_path):
    import torch
    from safetensors.torch import load_file

    folder = checkpoint(tmp_path / "bin", "llama", 104)
    torch.save(load_file(folder / "model.safetensors"), folder / "pytorch_model.bin")
    (folder / "model.safetensors").unlink()
    proc = run_without_torch("check", folder)
    assert_asks_for_the_extra(proc, "reading a PyTorch .bin checkpoint")
    assert "pytorch_model.bin" in proc.stderr
    edit_json(folder / "config.json", vocab_size=104)  # a healthy pair: still no PASS without reading the weights
    assert_asks_for_the_extra(run_without_torch("check", folder, "--fix", "--output", tmp_path / "out"),
                              "reading a PyTorch .bin checkpoint")


def test_bin_adapter_asks_for_the_extra(tmp_path):
    import torch
    from safetensors.torch import load_file

    base = checkpoint(tmp_path / "base", "llama", 104)
    folder = adapter(base, tmp_path / "a")
    torch.save(load_file(folder / "adapter_model.safetensors"), folder / "adapter_model.bin")
    (folder / "adapter_model.safetensors").unlink()
    assert_asks_for_the_extra(run_without_torch("check", folder, "--base", base), "reading a PyTorch .bin adapter")


def test_repro_and_guard_demo_ask_for_the_extra(tmp_path):
    batch = tmp_path / "batch.safetensors"
    batch.write_bytes(b"")
    assert_asks_for_the_extra(run_without_torch("repro", batch), "replaying a batch (repro)")
    assert_asks_for_the_extra(run_without_torch("demo", "--guard"), "demo --guard")


def test_demo_runs_without_torch():
    proc = run_without_torch("demo")
    assert proc.returncode == 0, proc.stderr
    assert "HVA101" in proc.stdout


def test_guard_api_without_torch_names_the_extra():
    code = ("import sys; sys.modules['torch'] = None\n"
            "from hf_vocab_audit.guard import check_batch, guard\n"
            "from hf_vocab_audit.errors import MissingExtra\n"
            "for call in (lambda: guard(object()), lambda: check_batch({}, None)):\n"
            "    try:\n        call()\n    except MissingExtra as exc:\n        print(exc)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 2 and all(torch_extra() in line for line in lines), proc.stdout


def test_the_install_hint_from_a_checkout_installs_the_checkout_with_its_constraints():
    """`pip install 'hf-vocab-audit[torch]'` from a clone would fetch the released package and ignore the pins."""
    import shlex

    words = shlex.split(torch_extra())
    assert words[:2] == ["pip", "install"]
    assert words[words.index("-c") + 1] == str(ROOT / "constraints.txt")
    assert words[words.index("-e") + 1] == f"{ROOT}[torch]"


def test_the_base_install_prints_nothing_of_transformers_missing_torch(tmp_path):
    """transformers advises "PyTorch was not found" when imported without torch (a chat-data scan imports it
    for the template): the command's stderr stays empty on a clean run."""
    import json

    from builders import CHATML

    folder = checkpoint(tmp_path / "m", "llama", 108, tokenizer_vocab=106, added_special=["<|im_start|>", "<|im_end|>"],
                        chat_template=CHATML)
    data = tmp_path / "chat.jsonl"
    row = {"messages": [{"role": "user", "content": "w1 w2"}, {"role": "assistant", "content": "w3"}]}
    data.write_text(json.dumps(row) + "\n")
    proc = run_without_torch("check", folder, "--dataset", data, "--select", "HVA5")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stderr == ""
