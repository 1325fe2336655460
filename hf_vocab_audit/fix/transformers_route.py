"""The transformers route: ``from_pretrained`` + ``resize_token_embeddings`` (never shrinking) + ``save_pretrained``.

Used for ``pytorch_model.bin`` inputs (loaded with ``weights_only=True``, written as safetensors), for
architectures whose vocabulary tensors the surgical path cannot all account for, on request
(``--method transformers``), and as the reference the tests compare the surgical path against.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core.fixes import Resized
from ..errors import AuditError, import_torch
from ..facts import Facts
from ..facts.tensors import BIN, BIN_INDEX, SAFETENSORS, SAFETENSORS_INDEX
from .repair_plan import CheckpointRepair
from .surgical import copy_tree

WRITTEN_BY_SAVE = ("config.json", "generation_config.json")


def model_class(facts: Facts) -> Any:
    """The transformers class named by config.json's architectures (never remote code), else AutoModel."""
    import transformers

    if facts.config.auto_map:
        raise AuditError(facts.config.path, "names custom code (auto_map); --fix never runs remote code")
    for name in facts.config.architectures:
        cls = getattr(transformers, name, None)
        if isinstance(cls, type) and hasattr(cls, "from_pretrained"):
            return cls
    return transformers.AutoModel


def load_model(folder: Path, facts: Facts, **kwargs: Any) -> Any:
    import_torch(folder, "loading the checkpoint with transformers (the transformers repair route, --verify-load)")
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    cls = model_class(facts)
    try:
        return cls.from_pretrained(folder, trust_remote_code=False, local_files_only=True, **kwargs)
    except Exception as exc:  # noqa: BLE001 - any failure to build the model is reported in one line
        first = (str(exc).strip().splitlines() or [exc.__class__.__name__])[-1]
        raise AuditError(folder, f"transformers cannot load it ({exc.__class__.__name__}: {first})"[:400]) from None


def write_transformers(facts: Facts, dst: Path, plan: CheckpointRepair, *, mean_resizing: bool = True) -> Resized:
    """Load, grow (only ever up) and save with transformers; copy every other file. Returns what it did."""
    model = load_model(facts.model_dir, facts, dtype="auto")
    rows = model.get_input_embeddings().weight.shape[0]
    target = plan.rows_after or rows
    if target > rows:
        model.resize_token_embeddings(target, mean_resizing=mean_resizing)
    model.save_pretrained(dst)
    weights = {SAFETENSORS, SAFETENSORS_INDEX, BIN, BIN_INDEX}
    if facts.tensors is not None:
        weights |= set(facts.tensors.files)
    copy_tree(facts.model_dir, dst, weights | set(WRITTEN_BY_SAVE) | plan.edited_files)
    return Resized(rows, max(rows, target), mean_resizing)
