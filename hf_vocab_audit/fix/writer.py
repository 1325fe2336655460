"""Atomic output: build the fixed checkpoint in a hidden sibling folder, then rename it into place.

An interrupted run (exception, Ctrl-C, kill -9) never leaves a partial folder at the target; a
leftover temporary folder of a dead process is removed by the next run.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path

from ..errors import AuditError
from ..io.durable import Flusher, sync_folder
from ..io.output_path import landing, refuse_link

__all__ = ["TMP_TAG", "Flusher", "atomic_folder", "check_output", "clean_stale", "default_output"]

TMP_TAG = ".hva-tmp-"


def default_output(model_dir: Path) -> Path:
    model_dir = model_dir.resolve()
    return model_dir.with_name(model_dir.name + "-fixed")


def check_output(model_dir: Path, output: Path, force: bool, tokenizer: Path | None = None) -> None:
    refuse_link(output, "fixed checkpoint")  # a planted MODEL_DIR-fixed link: --force would empty its target
    out = landing(output)
    for src, what in ((model_dir.resolve(), "model"), (tokenizer.resolve() if tokenizer else None, "tokenizer")):
        if src is not None and (out == src or src in out.parents or out in src.parents):
            raise AuditError(output, f"the output folder must not be the {what} folder, inside it, or around it")
    if out.exists() and not out.is_dir():
        raise AuditError(output, "exists and is not a folder")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise AuditError(output, "exists and is not empty (pass --force to replace it)")
    if not out.parent.is_dir():
        raise AuditError(output.parent, "the output's parent folder does not exist")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clean_stale(output: Path) -> None:
    """Remove temporary folders of earlier runs whose process is gone."""
    for path in output.parent.glob(f".{output.name}{TMP_TAG}*"):
        pid = path.name.rsplit(TMP_TAG, 1)[-1].split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)) and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def atomic_folder(output: Path, force: bool = False) -> Iterator[Path]:
    """Yield an empty temporary folder next to ``output``; on success it becomes ``output``."""
    refuse_link(output, "fixed checkpoint")
    output = landing(output)  # the parent resolved; the folder itself is never reached through a link
    clean_stale(output)
    tmp = output.with_name(f".{output.name}{TMP_TAG}{os.getpid()}-{secrets.token_hex(4)}")
    tmp.mkdir()
    try:
        yield tmp
        _replace(tmp, output, force)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _replace(tmp: Path, output: Path, force: bool) -> None:
    refuse_link(output, "fixed checkpoint")  # planted while the copy was written
    if output.exists():
        if any(output.iterdir()) and not force:
            raise AuditError(output, "appeared while writing and is not empty (pass --force to replace it)")
        old = output.with_name(f".{output.name}{TMP_TAG}{os.getpid()}-old-{secrets.token_hex(4)}")
        output.rename(old)
        try:
            tmp.rename(output)
        except BaseException:
            old.rename(output)
            raise
        shutil.rmtree(old, ignore_errors=True)
    else:
        tmp.rename(output)
    sync_folder(output.parent)  # make the rename durable where the platform allows it
