"""Promise: auditing a checkpoint never runs code from it.

Two proofs: the package's source is scanned for every way to execute checkpoint-provided code (an AST
check, so a new ``torch.load`` without ``weights_only=True`` fails CI), and real payloads (a pickle whose
``__reduce__`` creates a file, ``auto_map`` modules, a custom tokenizer class, a jinja payload) are audited
through the CLI while we watch for their marker file.
"""

from __future__ import annotations

import ast
import contextlib
import json
import pickle
from pathlib import Path

import pytest
import torch
from malformed import TOKENIZER_CONFIG, VOCAB, run_cli, tiny_checkpoint, write_json

PACKAGE = Path(__file__).resolve().parent.parent / "hf_vocab_audit"
# import_module with a computed argument is allowed only where the argument is the package's own constant.
IMPORT_MODULE_ALLOWED = {"rules/registry.py", "facts/transformers_tables.py"}
# pickle.loads allowed only on bytes our own code produced in this run, never on checkpoint or dataset bytes:
# the Ray engine's workers return their scan summaries pickled (Ray's own transport is pickle too).
PICKLE_LOADS_ALLOWED = {"dataset/engines/ray.py"}
FORBIDDEN_CALLS = {"eval", "exec", "compile", "__import__", "execfile"}
FORBIDDEN_ATTRS = {("pickle", "load"), ("pickle", "loads"), ("pickle", "Unpickler"), ("os", "system"),
                   ("os", "popen"), ("runpy", "run_path"), ("runpy", "run_module"), ("marshal", "loads"),
                   ("dill", "load"), ("joblib", "load"), ("numpy", "load"), ("np", "load")}


def _violations(path: Path) -> list[str]:
    rel = path.relative_to(PACKAGE).as_posix()
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names]
            module = getattr(node, "module", None) or ""
            if module == "jinja2" and any(n in ("Environment", "Template") for n in names):
                out.append(f"{rel}:{node.lineno}: jinja2 outside a sandbox")
            if any(n in ("dill", "joblib", "cloudpickle") for n in [module, *names]):
                out.append(f"{rel}:{node.lineno}: imports a pickle-based loader")
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        keywords = {k.arg: k.value for k in node.keywords}
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        owner = func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else ""
        where = f"{rel}:{node.lineno}"
        if isinstance(func, ast.Name) and name in FORBIDDEN_CALLS:
            out.append(f"{where}: {name}()")
        if (owner, name) in FORBIDDEN_ATTRS and not ((owner, name) == ("pickle", "loads")
                                                     and rel in PICKLE_LOADS_ALLOWED):
            out.append(f"{where}: {owner}.{name}()")
        if owner == "torch" and name == "load":
            value = keywords.get("weights_only")
            if not (isinstance(value, ast.Constant) and value.value is True):
                out.append(f"{where}: torch.load without weights_only=True")
        if "trust_remote_code" in keywords:
            value = keywords["trust_remote_code"]
            if not (isinstance(value, ast.Constant) and value.value is False):
                out.append(f"{where}: trust_remote_code is not the constant False")
        if name == "from_pretrained" and "trust_remote_code" not in keywords:
            out.append(f"{where}: from_pretrained without trust_remote_code=False")
        if name == "import_module" and rel not in IMPORT_MODULE_ALLOWED:
            out.append(f"{where}: importlib.import_module")
        if name == "apply_chat_template" or (name == "render" and owner in ("template", "Template")):
            out.append(f"{where}: renders a chat template")
    return out


def test_source_has_no_path_to_checkpoint_code():
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 10
    violations = [v for f in files for v in _violations(f)]
    assert violations == []


def test_the_source_scan_catches_each_pattern(tmp_path, monkeypatch):
    """The scanner itself fails on the patterns it exists for (so the test above can fail)."""
    bad = PACKAGE / "_scan_probe.py"
    source = (
        "import torch, pickle, os\nfrom transformers import AutoTokenizer\n"
        "torch.load('x')\ntorch.load('x', weights_only=False)\npickle.loads(b'')\nos.system('x')\n"
        "AutoTokenizer.from_pretrained('x')\nAutoTokenizer.from_pretrained('x', trust_remote_code=True)\n"
        "eval('1')\n"
    )
    bad.write_text(source)
    try:
        found = _violations(bad)
    finally:
        bad.unlink()
    assert len(found) == 7, found


class Payload:
    """Unpickling this calls ``open(marker, "w")``: the file appearing proves code ran."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


class Shell:
    def __init__(self, command: str):
        self.command = command

    def __reduce__(self):
        import os

        return (os.system, (self.command,))


def _weights_only_false_runs_it(path: Path, marker: Path) -> bool:
    """Control: the payload is real (torch.load with weights_only=False creates the marker). It runs here,
    in the test's process: the payload is this test's own (create or touch one file in tmp_path)."""
    with contextlib.suppress(Exception):  # a bare pickle runs its payload, then fails torch's format check
        torch.load(path, weights_only=False)
    ran = marker.exists()
    marker.unlink(missing_ok=True)
    return ran


@pytest.mark.parametrize("fmt", ["zip", "legacy"])
def test_code_running_pickle_is_hva001_and_never_runs(tmp_path, fmt):
    folder = tiny_checkpoint(tmp_path / "ckpt")
    (folder / "model.safetensors").unlink()
    marker = tmp_path / "PWNED"
    state = {"model.embed_tokens.weight": torch.zeros(8, 4), "evil": Payload(marker)}
    weights = folder / "pytorch_model.bin"
    if fmt == "zip":
        torch.save(state, weights)
    else:
        weights.write_bytes(pickle.dumps({"evil": Payload(marker)}, protocol=2))
    assert _weights_only_false_runs_it(weights, marker)

    outcome = run_cli([str(folder), "--format", "json"])
    assert not marker.exists()
    report = json.loads(outcome.stdout)
    (finding,) = [f for f in report["findings"] if f["code"] == "HVA001"]
    assert finding["location"]["file"] == "pytorch_model.bin"
    assert "imports io.open" in finding["message"] or "weights_only=True" in finding["message"]
    assert outcome.exit_code == 1


def test_os_system_pickle_names_the_import(tmp_path):
    folder = tiny_checkpoint(tmp_path / "ckpt")
    (folder / "model.safetensors").unlink()
    marker = tmp_path / "PWNED"
    weights = folder / "pytorch_model.bin"
    weights.write_bytes(pickle.dumps({"evil": Shell(f"touch {marker}")}, protocol=2))
    assert _weights_only_false_runs_it(weights, marker)
    outcome = run_cli([str(folder), "--format", "json"])
    assert not marker.exists()
    (finding,) = [f for f in json.loads(outcome.stdout)["findings"] if f["code"] == "HVA001"]
    assert "imports posix.system" in finding["message"]


def _evil_module(folder: Path, name: str, marker: Path) -> None:
    (folder / f"{name}.py").write_text(f"open({str(marker)!r}, 'w').close()\nclass Evil: pass\n")


def test_auto_map_and_custom_tokenizer_are_reported_not_imported(tmp_path):
    folder = tiny_checkpoint(tmp_path / "ckpt")
    marker = tmp_path / "PWNED"
    _evil_module(folder, "modeling_evil", marker)
    _evil_module(folder, "tokenization_evil", marker)
    config = json.loads((folder / "config.json").read_text())
    write_json(folder / "config.json", config | {"auto_map": {"AutoModelForCausalLM": "modeling_evil.Evil"}})
    write_json(folder / "tokenizer_config.json", TOKENIZER_CONFIG | {
        "tokenizer_class": "Evil", "auto_map": {"AutoTokenizer": ["tokenization_evil.Evil", None]}})
    outcome = run_cli([str(folder), "--format", "json"])
    assert not marker.exists()
    hits = [f for f in json.loads(outcome.stdout)["findings"] if f["code"] == "HVA002"]
    assert sorted(f["location"]["file"] for f in hits) == ["config.json", "tokenizer_config.json"]
    assert "AutoModelForCausalLM=modeling_evil.Evil" in hits[0]["message"] + hits[1]["message"]


def test_slow_tokenizer_with_custom_class_is_refused_not_imported(tmp_path):
    """Without tokenizer.json the fallback is AutoTokenizer(trust_remote_code=False): it refuses the class."""
    folder = tiny_checkpoint(tmp_path / "ckpt")
    (folder / "tokenizer.json").unlink()
    (folder / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    marker = tmp_path / "PWNED"
    _evil_module(folder, "tokenization_evil", marker)
    write_json(folder / "tokenizer_config.json", TOKENIZER_CONFIG | {
        "tokenizer_class": "Evil", "auto_map": {"AutoTokenizer": ["tokenization_evil.Evil", None]}})
    outcome = run_cli([str(folder)])
    assert not marker.exists()
    assert outcome.exit_code == 2 and len(outcome.stderr.splitlines()) == 1


def test_chat_template_is_read_not_rendered(tmp_path):
    folder = tiny_checkpoint(tmp_path / "ckpt")
    marker = tmp_path / "PWNED"
    (folder / "chat_template.jinja").write_text(
        "{{ cycler.__init__.__globals__.os.popen('touch " + str(marker) + "').read() }}<|im_start|>"
    )
    outcome = run_cli([str(folder), "--format", "json"])
    assert outcome.exit_code in (0, 1)
    assert not marker.exists()
