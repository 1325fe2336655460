"""The evidence of a bad batch: its tensors as safetensors plus a JSON sidecar, never a pickle.

A batch file can be shared in a bug report and replayed with ``hf-vocab-audit repro`` without running
anything from it: safetensors holds only tensors, the sidecar only JSON (limits, model identity and
config, rank, worker, batch number, the violations and their likely cause).
"""

from __future__ import annotations

import json
import os
import time
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


def default_dir() -> Path:
    return Path(os.environ.get(DEFAULT_DIR_ENV) or "hf-vocab-audit-evidence")


def sidecar_of(batch_file: Path) -> Path:
    return batch_file.with_suffix(".json")


def write_evidence(folder: Path, batch: Mapping[str, Any], limits: LiveLimits, violations: list[BatchViolation], *,
                   rank: int, worker: int | None, batch_number: int, config: dict[str, Any] | None) -> Path:
    """Write ``batch`` and its sidecar into ``folder``; returns the ``.safetensors`` path."""
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
    return target


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
