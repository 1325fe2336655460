"""``hf-vocab-audit demo --guard``: the guard catches a pad token added without a resize, repro replays it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_demo_guard_catches_the_pad_bug_and_replays_it(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    keep = tmp_path / "demo"
    proc = subprocess.run([sys.executable, "-m", "hf_vocab_audit", "demo", "--guard", "--keep", str(keep)],
                          capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "BatchIndexError: HVA501 in batch 0" in out and "pad token '<pad>' (id 259) has no embedding row" in out
    assert "reproduced: IndexError: index out of range in self" in out
    assert "hva-guard:" not in out  # the machine-readable line stays out of the human output
    saved = list((keep / "guard-evidence").glob("batch-*.safetensors"))
    assert len(saved) == 1 and saved[0].with_suffix(".json").exists()
    # The kept checkpoint itself is healthy: the bug is in the script, which only the guard sees.
    check = subprocess.run([sys.executable, "-m", "hf_vocab_audit", "check", str(keep)], capture_output=True,
                           text=True, timeout=120, env=env)
    assert check.returncode == 0, check.stdout
