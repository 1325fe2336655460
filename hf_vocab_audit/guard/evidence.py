"""The evidence of a bad batch: its tensors as safetensors plus a JSON sidecar, never a pickle.

A batch file can be shared in a bug report and replayed with ``hf-vocab-audit repro`` without running
anything from it: safetensors holds only tensors, the sidecar only JSON (limits, model identity and
config, rank, worker, batch number, the violations and their likely cause).

Which batches leave evidence: the one that failed, and only it. A batch the guard raises on is written when
it fails: in the collator for ``Guard.wrap`` (its error is that batch's), at the forward for
``guard_trainer`` (the Trainer's loader prefetches: a bad batch that never reached the model, because the run
stopped earlier, leaves nothing), in the pre-hook for ``Guard.hooks``.

How long evidence stays: the folder keeps the evidence of the newest ``keep_runs`` runs (5 by default). When
a run writes its first file, the files of older runs past that count are deleted, oldest first; a healthy run
writes nothing and deletes nothing, so the evidence of the last failure stays until runs that fail replace
it. A run is one guard, or one ``torchrun``/``accelerate launch`` job (all its ranks share
``TORCHELASTIC_RUN_ID``). Only this tool's files are deleted: ``batch-*.safetensors`` whose sidecar says
it is an evidence sidecar, and that sidecar.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import AuditError, import_torch
from ..facts.tree import regular_file_inside
from ..io.jsonfile import MAX_CONFIG_BYTES, read_json_object
from ..io.safetensors_header import read_header
from ..version import __version__
from .checks import BatchViolation
from .limits import LiveLimits

FORMAT = "hf-vocab-audit-batch"
MAX_BATCH_BYTES = 1024 * 1024 * 1024  # a saved batch: token ids and masks, pixel values at most
DEFAULT_DIR_ENV = "HF_VOCAB_AUDIT_EVIDENCE"
KEEP_RUNS = 5  # runs whose evidence a folder keeps
RUN_ENV = "TORCHELASTIC_RUN_ID"  # set by torchrun (and accelerate launch) to one id for every rank of a job


def new_run_id() -> str:
    """This run's id: the launcher's job id shared by its ranks, else one made for this guard."""
    launched = os.environ.get(RUN_ENV, "")
    if launched and launched != "none":  # torchrun's default id without --standalone or --rdzv-id
        return launched
    return f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def default_dir() -> Path:
    return Path(os.environ.get(DEFAULT_DIR_ENV) or "hf-vocab-audit-evidence")


def sidecar_of(batch_file: Path) -> Path:
    return batch_file.with_suffix(".json")


def write_evidence(folder: Path, batch: Mapping[str, Any], limits: LiveLimits, violations: list[BatchViolation], *,
                   rank: int, worker: int | None, batch_number: int, config: dict[str, Any] | None,
                   run: str | None = None, keep_runs: int | None = KEEP_RUNS) -> Path:
    """Write ``batch`` and its sidecar into ``folder``; returns the ``.safetensors`` path.

    ``run``: the run the batch belongs to; then the files of all but the newest ``keep_runs`` runs in
    ``folder`` are deleted (None: kept)."""
    torch = import_torch(folder, "saving the guard's evidence")
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    code = violations[0].code if violations else "clean"
    stem = f"batch-rank{rank}-worker{worker if worker is not None else 'main'}-{batch_number:06d}-{code}"
    tensors: dict[str, Any] = {}
    not_saved: list[str] = []
    for key, value in batch.items():
        if isinstance(value, torch.Tensor) and value.device.type != "meta":
            tensors[key] = value.detach().to("cpu").contiguous().clone()
        else:
            not_saved.append(str(key))
    sidecar = {
        "format": FORMAT,
        "version": 1,
        "tool_version": __version__,
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "rank": rank,
        "worker": worker,
        "batch": batch_number,
        "run": run,
        "keys_not_saved": not_saved,
        "violations": [v.to_dict() for v in violations],
        "limits": limits.to_dict(),
        "config": config,
    }
    target = folder / f"{stem}.safetensors"
    tmp = folder / f".{stem}.{os.getpid()}.tmp"
    save_file(tensors, str(tmp), metadata={"format": "pt", "producer": FORMAT})
    os.replace(tmp, target)
    side = sidecar_of(target)
    tmp_side = folder / f".{stem}.{os.getpid()}.json.tmp"
    tmp_side.write_text(json.dumps(sidecar, indent=2, default=str))
    os.replace(tmp_side, side)
    if run is not None and keep_runs is not None:
        prune(folder, run, keep_runs)
    return target


def _run_of(batch_file: Path) -> str | None:
    """The run a batch file belongs to (its own name for one written before runs were recorded), or None
    when it is not this tool's evidence (then it is never deleted)."""
    side = sidecar_of(batch_file)
    try:
        if batch_file.is_symlink() or side.is_symlink() or not side.is_file():
            return None
        data = read_json_object(side, MAX_CONFIG_BYTES)
    except (AuditError, OSError):
        return None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return None
    run = data.get("run")
    return run if isinstance(run, str) and run else f"file:{batch_file.name}"


def prune(folder: Path, run: str, keep_runs: int) -> list[Path]:
    """Delete the evidence of all but the newest ``keep_runs`` runs in ``folder`` (``run``, the one writing
    now, always kept); returns the batch files deleted. A file another process removes first is skipped."""
    runs: dict[str, list[Path]] = {}
    newest: dict[str, float] = {}
    for batch_file in folder.glob("batch-*.safetensors"):
        owner = _run_of(batch_file)
        if owner is None:
            continue
        try:
            mtime = batch_file.stat().st_mtime
        except OSError:
            continue
        runs.setdefault(owner, []).append(batch_file)
        newest[owner] = max(newest.get(owner, mtime), mtime)
    older = sorted((r for r in runs if r != run), key=lambda r: newest[r], reverse=True)
    deleted = []
    for owner in older[max(keep_runs - 1, 0):]:
        for batch_file in runs[owner]:
            for path in (batch_file, sidecar_of(batch_file)):
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
            deleted.append(batch_file)
    return deleted


def read_evidence(batch_file: Path) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """(tensors, sidecar or None) of a saved batch; AuditError for a missing or malformed file."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    if not batch_file.is_file() and not batch_file.is_symlink():
        raise AuditError(batch_file, "no such batch file (the guard writes batch-*.safetensors)")
    # Evidence is shared in bug reports: as untrusted as a checkpoint. Both files must be regular files in
    # the batch's folder (a sidecar linked to ~/.ssh/... was read and printed), within a size limit (a 4 GiB
    # sparse sidecar was read whole), and the batch's header is validated before the library maps it.
    folder = batch_file.parent
    regular_file_inside(batch_file, folder, "evidence folder")
    size = batch_file.stat().st_size
    if size > MAX_BATCH_BYTES:
        raise AuditError(batch_file, f"is {size} bytes, over the {MAX_BATCH_BYTES}-byte limit for a saved batch")
    read_header(batch_file, batch_file.name)
    try:
        tensors = load_file(str(batch_file))
    except (SafetensorError, OSError, ValueError) as exc:
        raise AuditError(batch_file, f"not a readable safetensors file: {exc}") from None
    side = sidecar_of(batch_file)
    if not side.is_file() and not side.is_symlink():
        return tensors, None
    regular_file_inside(side, folder, "evidence folder")
    try:
        data = read_json_object(side, MAX_CONFIG_BYTES)
    except AuditError as exc:
        raise AuditError(side, f"not a readable JSON sidecar: {exc.problem}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise AuditError(side, f"not an {FORMAT} sidecar")
    return tensors, data
