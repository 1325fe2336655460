"""Outputs never go through a link and never land inside an input (issue 24, class 2)."""

from __future__ import annotations

from pathlib import Path

import pytest
from malformed import _needs_growth, tiny_checkpoint

from hf_vocab_audit.errors import AuditError
from hf_vocab_audit.io.output_path import check_output_file


def test_a_plain_new_file_outside_the_inputs_is_accepted(tmp_path: Path):
    model = tiny_checkpoint(tmp_path / "m")
    check_output_file(tmp_path / "audit.sarif", [model, None, "org/name"])
    (tmp_path / "audit.sarif").write_text("old", encoding="utf-8")
    check_output_file(tmp_path / "audit.sarif", [model])  # replacing an earlier report is fine


@pytest.mark.parametrize("how", ["link to a model file", "dangling link", "inside", "through a folder link", "a folder"])
def test_refused(tmp_path: Path, how: str):
    model = tiny_checkpoint(tmp_path / "m")
    out = tmp_path / "out.json"
    if how == "link to a model file":
        out.symlink_to(model / "config.json")
    elif how == "dangling link":
        out.symlink_to(tmp_path / "elsewhere" / "x.json")
    elif how == "inside":
        out = model / "report.json"
    elif how == "through a folder link":
        (tmp_path / "alias").symlink_to(model, target_is_directory=True)
        out = tmp_path / "alias" / "report.json"
    else:
        out.mkdir()
    with pytest.raises(AuditError, match="out.json|report.json"):
        check_output_file(out, [model])


def test_fix_checkpoint_never_writes_through_a_link(tmp_path: Path):
    """The library API too: a planted output link is refused and the folder it points to is untouched."""
    from hf_vocab_audit.fix import fix_checkpoint

    model = tiny_checkpoint(tmp_path / "m")
    _needs_growth(model)
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("precious", encoding="utf-8")
    (tmp_path / "m-fixed").symlink_to(victim, target_is_directory=True)
    with pytest.raises(AuditError, match="m-fixed: is a link"):
        fix_checkpoint(model, force=True, verify_load="never")
    assert [p.name for p in victim.iterdir()] == ["keep.txt"]
    assert (tmp_path / "m-fixed").is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m", "m-fixed", "victim"]
