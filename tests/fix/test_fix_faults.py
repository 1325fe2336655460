"""Promise 3 under real faults: `check --fix` killed at random moments (SIGKILL) or out of disk
(RLIMIT_FSIZE, a full tmpfs) never changes its input, never leaves a partial output, and reruns cleanly.
Uses the harness in tests/fixsafety.py; the counts are reported in docs/robustness.md."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest
from fixsafety import (
    no_partial_output,
    random_kill_points,
    run_killed,
    run_killed_after,
    run_with_file_size_limit,
    small_tmpfs,
    tree_state,
)

from hf_vocab_audit.fix.writer import TMP_TAG

from .fixkit import broken

ROOT = Path(__file__).resolve().parent.parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}


def _fix(model: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "hf_vocab_audit", "check", str(model), "--fix", "--output", str(out),
            "--verify-load", "never", "--format", "json"]


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> tuple[Path, dict[str, str], dict[str, str], float]:
    """A broken checkpoint, its tree state, a complete fix's output state, and the fix's duration."""
    base = tmp_path_factory.mktemp("fixfaults")
    folder = broken(base / "in")
    start = time.perf_counter()
    assert run_killed(_fix(folder, base / "reference"), 300, env=ENV) in (0, 1)
    seconds = time.perf_counter() - start
    largest = max(p.stat().st_size for p in (base / "reference").iterdir())
    total = sum(p.stat().st_size for p in (base / "reference").iterdir())
    return folder, tree_state(folder), tree_state(base / "reference"), seconds, (largest, total)


def test_sigkill_at_random_points_then_rerun(model, tmp_path):
    folder, before, complete, seconds, _ = model
    assert complete, "the reference fix wrote nothing"
    mid_write = 0
    delays = [0.0, 0.0005, 0.001, 0.002, 0.003, 0.005] + random_kill_points(seconds, 6, seed=7)
    for n, delay in enumerate(delays):
        target = tmp_path / f"out{n}"
        parent_before = {p.name for p in tmp_path.iterdir()}
        if n < 6:  # aimed: killed `delay` s after its staging folder appears
            run_killed_after(_fix(folder, target), (tmp_path, f".{target.name}{TMP_TAG}*"), delay, env=ENV)
        else:  # unaimed: `delay` s after start (start-up, audit, write or done)
            run_killed(_fix(folder, target), delay, env=ENV)
        mid_write += bool(list(tmp_path.glob(f".{target.name}{TMP_TAG}*")))
        assert tree_state(folder) == before, f"input changed (kill at {delay:.2f}s)"
        assert no_partial_output(target, complete, parent_before, f".{target.name}{TMP_TAG}") == []
        code = run_killed(_fix(folder, target) + (["--force"] if target.exists() else []), 300, env=ENV)
        assert code in (0, 1), f"rerun after a kill at {delay:.2f}s failed"
        assert tree_state(target) == complete
        assert not list(tmp_path.glob(f".{target.name}{TMP_TAG}*")), "the rerun left the dead run's staging"
    print(f"{mid_write} of {len(delays)} kills landed while the output was being staged")
    assert mid_write >= 2, "the kills never reached the writer"


@pytest.mark.parametrize("fraction", [0.01, 0.5, 0.99])
def test_full_disk_leaves_nothing(model, tmp_path, fraction):
    """No file may grow past a fraction of the output's largest file: the write fails with EFBIG."""
    folder, before, complete, _, (largest, _total) = model
    target = tmp_path / "out"
    done = run_with_file_size_limit(_fix(folder, target), int(largest * fraction), env=ENV)
    assert done.returncode == 2, done.stderr[-2000:]
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr, done.stderr
    assert tree_state(folder) == before
    assert no_partial_output(target, complete, {p.name for p in tmp_path.iterdir()} - {"out"}) == []
    assert not target.exists()


def test_full_tmpfs_leaves_nothing(model):
    folder, before, complete, _, (_largest, total) = model
    with small_tmpfs(str(max(total // 2, 4096))) as disk:  # half the output fits
        if disk is None:
            pytest.skip("cannot mount a tmpfs here (needs root)")
        done = run_with_file_size_limit(_fix(folder, disk / "out"), 2**40, env=ENV)
        assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr[-2000:]
        assert tree_state(folder) == before
        assert list(disk.iterdir()) == []
