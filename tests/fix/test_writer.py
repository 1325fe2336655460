"""Atomic output: refusals, a crash mid-write, a dead run's leftovers, --force."""

from __future__ import annotations

import errno
import os

import pytest

from hf_vocab_audit.errors import AuditError
from hf_vocab_audit.fix import fix_checkpoint, surgical
from hf_vocab_audit.fix.writer import TMP_TAG
from hf_vocab_audit.io import file_copy

from .fixkit import broken, tree_hashes


def siblings(path):
    return sorted(p.name for p in path.parent.iterdir() if p.name != "m")


def test_default_output_is_a_sibling_and_a_second_run_needs_force(tmp_path, guard_input):
    src = guard_input(broken(tmp_path / "m"))
    report = fix_checkpoint(src)
    assert report.target == str((tmp_path / "m-fixed").resolve())
    with pytest.raises(AuditError, match="m-fixed: exists and is not empty \\(pass --force to replace it\\)"):
        fix_checkpoint(src)
    (tmp_path / "m-fixed" / "stale.txt").write_text("old")
    fix_checkpoint(src, force=True)
    assert not (tmp_path / "m-fixed" / "stale.txt").exists()
    assert siblings(src) == ["m-fixed"]


def test_output_inside_the_input_is_refused(tmp_path, guard_input):
    src = guard_input(broken(tmp_path / "m"))
    with pytest.raises(AuditError, match="must not be the model folder"):
        fix_checkpoint(src, output=src / "fixed")


def test_crash_mid_write_leaves_no_output_and_the_rerun_works(tmp_path, guard_input, monkeypatch):
    src = guard_input(broken(tmp_path / "m"))
    calls = []
    real = file_copy.copy_range

    def disk_full(*args):
        calls.append(args)
        if len(calls) == 3:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(*args)

    monkeypatch.setattr(file_copy, "copy_range", disk_full)
    with pytest.raises(AuditError, match="out: cannot be written \\(No space left on device\\); nothing was written"):
        fix_checkpoint(src, output=tmp_path / "out")
    assert siblings(src) == []  # neither the output nor a temporary folder
    monkeypatch.setattr(file_copy, "copy_range", real)
    report = fix_checkpoint(src, output=tmp_path / "out")
    assert report.exit_code() == 0 and siblings(src) == ["out"]


def test_interrupt_leaves_no_output(tmp_path, guard_input, monkeypatch):
    src = guard_input(broken(tmp_path / "m"))

    def ctrl_c(*_):
        raise KeyboardInterrupt

    monkeypatch.setattr(surgical, "rewrite_shard", ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        fix_checkpoint(src, output=tmp_path / "out")
    assert siblings(src) == []


def test_leftovers_of_a_killed_run_are_removed(tmp_path, guard_input):
    src = guard_input(broken(tmp_path / "m"))
    dead = tmp_path / f".out{TMP_TAG}999999999-deadbeef"  # a pid no process has
    dead.mkdir()
    (dead / "model.safetensors").write_bytes(b"partial")
    fix_checkpoint(src, output=tmp_path / "out")
    assert siblings(src) == ["out"]
    assert tree_hashes(tmp_path / "out")  # complete output
