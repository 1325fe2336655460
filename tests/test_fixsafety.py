"""The fault-injection tools in tests/fixsafety.py catch a writer that loses data (and pass one that
does not), so the --fix tests built on them can fail. Toy writers copy a folder: ``naive`` writes the
target in place, ``atomic`` stages next to it and renames; ``inplace`` edits its input."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from fixsafety import (
    enospc_after,
    no_partial_output,
    random_kill_points,
    run_killed,
    run_with_file_size_limit,
    small_tmpfs,
    tree_state,
)

WRITER = r'''
import os, shutil, sys, tempfile, time
mode, src, dst = sys.argv[1:4]
src, dst = os.path.abspath(src), os.path.abspath(dst)
parent = os.path.dirname(dst)
for stale in os.listdir(parent):
    if stale.startswith(".toy-staging-"):
        shutil.rmtree(os.path.join(parent, stale))
out = dst if mode == "naive" else src if mode == "inplace" else tempfile.mkdtemp(prefix=".toy-staging-", dir=parent)
os.makedirs(out, exist_ok=True)
for name in sorted(os.listdir(src)):
    data = open(os.path.join(src, name), "rb").read()
    with open(os.path.join(out, name), "wb") as fh:
        for i in range(0, len(data), 4096):
            fh.write(data[i : i + 4096][::-1] if mode == "inplace" else data[i : i + 4096])
            fh.flush()
            time.sleep(0.002)
        os.fsync(fh.fileno())
if mode == "atomic":
    shutil.rmtree(dst, ignore_errors=True)  # a finished earlier run
    os.rename(out, dst)
'''


@pytest.fixture()
def setup(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    for i in range(4):
        (src / f"shard-{i}.bin").write_bytes(os.urandom(64 * 1024))
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    out = tmp_path / "out"
    out.mkdir()
    return src, script, out


def _cmd(script: Path, mode: str, src: Path, dst: Path) -> list[str]:
    return [sys.executable, str(script), mode, str(src), str(dst)]


@pytest.mark.parametrize("mode,loses", [("naive", True), ("atomic", False)])
def test_sigkill_at_random_points(setup, mode, loses):
    src, script, out = setup
    before = tree_state(src)
    complete = tree_state(src)  # a finished copy equals its input
    problems = []
    for n, delay in enumerate(random_kill_points(0.5, 6, seed=1)):
        target = out / f"t{n}"
        parent_before = {p.name for p in out.iterdir()}
        run_killed(_cmd(script, mode, src, target), delay)
        problems += no_partial_output(target, complete, parent_before, temp_prefix=".toy-staging-")
        assert tree_state(src) == before  # the input is never touched
        assert run_killed(_cmd(script, mode, src, target), 60) == 0 or mode == "naive"  # rerun after a kill
        if mode == "atomic":
            assert tree_state(target) == complete
            assert not [p for p in out.iterdir() if p.name.startswith(".toy-staging-")]
    assert bool(problems) is loses, problems


@pytest.mark.parametrize("mode,loses", [("naive", True), ("atomic", False)])
def test_full_disk_by_file_size_limit(setup, mode, loses):
    src, script, out = setup
    target = out / "t"
    done = run_with_file_size_limit(_cmd(script, mode, src, target), 10_000)
    assert done.returncode != 0 and "File too large" in done.stderr
    assert bool(no_partial_output(target, tree_state(src), set(), temp_prefix=".toy-staging-")) is loses


def test_full_disk_on_a_small_tmpfs(setup):
    src, script, _ = setup
    with small_tmpfs("128k") as disk:
        if disk is None:
            pytest.skip("cannot mount a tmpfs here (needs root)")
        done = run_with_file_size_limit(_cmd(script, "naive", src, disk / "t"), 2**40)
        assert done.returncode != 0 and "No space left" in done.stderr
        assert no_partial_output(disk / "t", tree_state(src), set())


def test_input_hashing_catches_a_writer_that_edits_its_input(setup):
    src, script, out = setup
    before = tree_state(src)
    run_killed(_cmd(script, "inplace", src, out / "t"), 60)
    assert tree_state(src) != before


def test_enospc_injected_in_process(tmp_path):
    target = tmp_path / "config.json"
    with enospc_after(100), pytest.raises(OSError) as info:
        with open(target, "w") as fh:
            for i in range(50):
                fh.write(json.dumps({"key": i}))
    assert info.value.errno == 28
    assert target.exists() and len(target.read_text()) <= 100  # a naive writer leaves a partial file
    with enospc_after(10**6):
        target.write_text("ok")  # Path.write_text goes through io.open too
    assert target.read_text() == "ok"
