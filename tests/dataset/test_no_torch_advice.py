"""A base install has no torch, and a ``--dataset`` run never needs it: transformers' import-time advice
("PyTorch was not found. Models won't be available...") must not reach the output, where stderr is for the one
error line. ``scripts/base_install_smoke.py`` asserts the same in a real install without torch (``.ci/run``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import chat_builders
from dataset_builders import write_jsonl

ROOT = Path(__file__).resolve().parents[2]
ADVICE = "PyTorch was not found"
ROWS = [{"messages": [{"role": "user", "content": "w1"}, {"role": "assistant", "content": "w2"}]}] * 3
# A child where ``import torch`` fails, as in the base install (transformers then finds no torch).
WITHOUT_TORCH = "import sys; sys.modules['torch'] = None; "


def _child(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    # As a user's shell has it: neither the command's setting nor the suite's quiet transformers logging.
    env = {k: v for k, v in os.environ.items() if k not in ("TRANSFORMERS_NO_ADVISORY_WARNINGS", "TRANSFORMERS_VERBOSITY")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, "-c", WITHOUT_TORCH + code, *args], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=180, check=False)


def test_a_dataset_run_without_torch_prints_no_torch_advice(tmp_path):
    model = chat_builders.chat_checkpoint(tmp_path / "m", chat_builders.CHATML, resized=True)
    data = write_jsonl(tmp_path / "chat.jsonl", ROWS)
    proc = _child("from hf_vocab_audit.cli import run; sys.argv[0] = 'hf-vocab-audit'; run()",
                  "check", str(model), "--dataset", str(data))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "scanned:" in out, out[-2000:]
    assert ADVICE not in out
    # The control: the same child without the command's setting does print it (the hiding takes effect).
    assert ADVICE in _child("import transformers; transformers.AutoTokenizer").stderr
