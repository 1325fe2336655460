"""Copy the weight shards no surgical fix rewrites while the input is still being audited.

Reading and auditing the tokenizer takes a single core about half a second before the plan is known;
the shards that hold no vocabulary tensor are copied whole whatever the plan (the surgical path only
rewrites shards holding a tensor that grows or has rows re-initialised, and those are vocabulary
tensors). A background thread copies them by the kernel into a hidden staging folder next to the output
and starts their disk writes meanwhile; :func:`..pipeline._write` moves them into its temporary folder
(a rename) and verifies them like every other copied shard. When the transformers route is taken, or
anything fails, the staging folder is removed (after a kill, the next run removes it: it carries the
temporary-folder tag and the dead process id).
"""

from __future__ import annotations

import os
import secrets
import shutil
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..errors import AuditError
from ..facts import Facts
from ..facts.config import load_config
from ..facts.embeddings import find_embeddings
from ..facts.tensors import CheckpointTensors
from ..facts.tree import check_tree, regular_file_inside
from ..facts.vocab_geometry import vocab_tensors
from ..facts.weight_formats.registry import format_of, load_tensors
from ..io import file_copy
from ..io.durable import datasync
from ..io.output_path import landing
from .writer import TMP_TAG, check_output


class EarlyCopies:
    """Shards being copied into ``folder`` by one background thread."""

    def __init__(self, src: Path, folder: Path, tensors: CheckpointTensors, files: list[str]):
        self.src, self.folder, self.tensors, self.files = src, folder, tensors, files
        self._stop = threading.Event()
        self._pool = ThreadPoolExecutor(max_workers=1)
        self._job = self._pool.submit(self._copy)

    def _copy(self) -> None:
        for name in self.files:
            if self._stop.is_set():  # closed: a failed or interrupted fix does not wait for the rest
                return
            dst = self.folder / name
            file_copy.copy_file(regular_file_inside(self.src / name, self.src), dst)  # never a link out
            datasync(dst)  # the disk writes them while the tokenizer is read

    def move_into(self, tmp: Path) -> set[str]:
        """Wait for the copies (their errors are raised here) and move them into ``tmp``; the names moved."""
        self._job.result()
        for name in self.files:
            (tmp / name).parent.mkdir(parents=True, exist_ok=True)
            os.replace(self.folder / name, tmp / name)
        return set(self.files)

    def close(self) -> None:
        """Stop (after the file being copied) and remove the staging folder and what is left in it."""
        self._stop.set()
        self._pool.shutdown(wait=True, cancel_futures=True)
        shutil.rmtree(self.folder, ignore_errors=True)


def start(src: Path, output: Path, force: bool, tokenizer: Path | None) -> EarlyCopies | None:
    """Start copying the shards without a vocabulary tensor, or None (nothing to gain, or the input or the
    output is not one that the checks coming next would accept: they then raise their own errors)."""
    try:
        if not src.is_dir() or not (src / "config.json").is_file():
            return None
        check_tree(src)
        check_output(src, output, force, tokenizer)
        tensors = load_tensors(src)
        if tensors is None or not format_of(tensors).byte_ranges or tensors.refused or len(tensors.files) < 2:
            return None
        config = load_config(src / "config.json")
        embeddings = find_embeddings(tensors, config)
        if embeddings.input is None:
            return None
        partial = Facts(src, config, None, None, tensors, embeddings)
        vocab = {t.file for t in vocab_tensors(partial)}
    except (AuditError, OSError, ValueError):
        return None
    files = [f for f in tensors.files if f not in vocab]
    if not files:
        return None
    out = landing(output)
    folder = out.with_name(f".{out.name}{TMP_TAG}{os.getpid()}-early-{secrets.token_hex(4)}")
    try:
        folder.mkdir()
    except OSError:
        return None
    return EarlyCopies(src, folder, tensors, files)
