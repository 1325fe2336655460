"""Where the tool may write: never through a link, never inside an input.

A pull request can plant files next to the checkpoint it brings: ``hf-vocab-audit.sarif`` as a link to the
model's ``config.json`` made the report overwrite it, and ``MODEL_DIR-fixed`` as a link to another folder
made ``--fix --force`` delete that folder's files and write there. Every output path is checked here
before anything is written: its last component must not be a link (a dangling one included), and the
place it lands (its parent resolved) must not be an input folder or inside one.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from ..errors import AuditError


def landing(path: Path) -> Path:
    """Where ``path`` lands: its parent resolved, its own name kept (a link there is refused, not followed)."""
    path = Path(os.path.abspath(path))
    return path.parent.resolve() / path.name


def refuse_link(path: Path, what: str) -> None:
    if os.path.islink(path):
        raise AuditError(path, f"is a link (to {os.readlink(path)}); the {what} is never written through a link: "
                               "remove it or choose another path")


def _local_inputs(inputs: Iterable[str | Path | None]) -> Iterator[Path]:
    """The inputs that are on this disk, resolved (a Hub id, or an option not given, is none)."""
    for given in inputs:
        if given is not None and Path(given).exists():
            yield Path(given).resolve()


def check_output_file(path: Path, inputs: Iterable[str | Path | None], what: str = "report") -> None:
    """Refuse an output file that is a link, not a regular file, or lands in (or on) one of ``inputs``."""
    refuse_link(path, what)
    real = landing(path)
    if real.exists() and not real.is_file():
        raise AuditError(path, f"exists and is not a regular file; the {what} cannot be written there")
    for src in _local_inputs(inputs):
        if real == src or src in real.parents:
            raise AuditError(path, f"lands inside the input {src}; write the {what} outside the checkpoint "
                                   "and its data")


def check_output_folder(path: Path, inputs: Iterable[str | Path | None], what: str = "fixed checkpoint") -> None:
    """Refuse an output folder that is, holds or lies inside one of ``inputs`` (files or folders the run reads:
    a settings file, the --base checkpoint, a dataset): ``--force`` replaces the folder and would delete them.
    Run before anything is written or deleted."""
    real = landing(path)
    for src in _local_inputs(inputs):
        if real == src or real in src.parents:
            raise AuditError(path, f"holds {src}, which this run reads; --force would delete it: write the "
                                   f"{what} to another folder")
        if src in real.parents:
            raise AuditError(path, f"lands inside the input {src}; write the {what} outside it")
