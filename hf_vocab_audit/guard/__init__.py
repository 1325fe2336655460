"""Guard a training run: check every batch against the live model's limits before the GPU sees it.

    import hf_vocab_audit as hva
    g = hva.guard(model, tokenizer)
    g.preflight()                      # the static rules on the in-memory pair
    collate = g.wrap(data_collator)    # every batch checked on the host, in the DataLoader worker
    hva.guard_trainer(trainer)         # the same for a transformers Trainer
    with g.hooks(): model(**batch)     # batches built on the device (forward pre-hooks; each check syncs)

torch is imported only when a guard is built, so ``hf-vocab-audit check`` never imports it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import BatchIndexError, PreflightError

# The rest is imported on first use (PEP 562): `import hf_vocab_audit` binds guard() here, and the static
# gate, which never builds a guard, does not pay for the batch checks.
_LAZY = frozenset({"BatchViolation", "check_batch", "Guard", "GuardedCollator", "LiveLimits", "limits_of"})

if TYPE_CHECKING:
    from .checks import BatchViolation, check_batch
    from .core import Guard, GuardedCollator
    from .limits import LiveLimits, limits_of


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import checks, core, limits

    value = next(getattr(m, name) for m in (checks, core, limits) if hasattr(m, name))
    globals()[name] = value
    return value


def guard(model: Any, tokenizer: Any = None, *, evidence_dir: str | Path | bool | None = True,
          ignore_index: int = -100, keep_runs: int | None = 5) -> Guard:
    """A :class:`Guard` for ``model`` (limits read from its modules) and ``tokenizer`` (cause hints, preflight).

    ``evidence_dir``: where the batch that failed is saved (safetensors + JSON sidecar); True means
    ``$HF_VOCAB_AUDIT_EVIDENCE`` or ``./hf-vocab-audit-evidence``; False saves nothing. Only a batch the guard
    raised on is saved, never one prefetched behind it.
    ``ignore_index``: the label value the loss skips (-100 in transformers).
    ``keep_runs``: the folder keeps the evidence of the newest this many runs; a failing run deletes the
    older runs' files when it writes its own (a torchrun job is one run); None keeps everything.
    """
    from .core import Guard

    return Guard(model, tokenizer, evidence_dir=evidence_dir, ignore_index=ignore_index, keep_runs=keep_runs)


def guard_trainer(trainer: Any, *, tokenizer: Any = None, preflight: str = "raise",
                  evidence_dir: str | Path | bool | None = True, ignore_index: int = -100,
                  keep_runs: int | None = 5) -> Guard:
    """Guard a transformers ``Trainer``: its collator is wrapped, and the preflight runs at ``on_train_begin``.

    ``tokenizer`` defaults to the Trainer's ``processing_class`` or the one its data collator holds; when
    there is none the guard says so once at train start, and the preflight checks the model alone.
    """
    from .trainer import guard_trainer as _guard_trainer

    return _guard_trainer(trainer, tokenizer=tokenizer, preflight=preflight, evidence_dir=evidence_dir,
                          ignore_index=ignore_index, keep_runs=keep_runs)


__all__ = ["BatchIndexError", "Guard", "GuardedCollator", "LiveLimits", "PreflightError", "BatchViolation", "check_batch",
           "guard", "guard_trainer", "limits_of"]
