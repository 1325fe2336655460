"""``guard_trainer``: a transformers ``Trainer`` with its collator guarded and a preflight at train start.

No ``TrainerCallback`` event sees the batch, and accelerate moves batches to the device while prefetching,
so the batch check lives in the collator (it runs in the DataLoader workers). Because of the prefetch, a
bad batch is not raised in the collator: it carries its error to a forward pre-hook, which raises it when
that batch reaches the model, at the step that would have crashed. The callback runs the preflight and
re-reads the limits when training begins (after any resize the script did).
"""

from __future__ import annotations

from typing import Any

from .core import Guard, GuardedCollator


def guard_trainer(trainer: Any, *, preflight: str = "raise", evidence_dir: Any = True,
                  ignore_index: int = -100) -> Guard:
    """Guard ``trainer``: wrap ``trainer.data_collator``, add a callback that runs the preflight.

    ``preflight``: "raise" (fail like ``check``), "warn" (print the report only) or "off".
    """
    from transformers import TrainerCallback

    if preflight not in ("raise", "warn", "off"):
        raise ValueError(f"preflight must be 'raise', 'warn' or 'off', not {preflight!r}")
    tokenizer = getattr(trainer, "processing_class", None) or getattr(trainer, "tokenizer", None)
    if tokenizer is not None and not hasattr(tokenizer, "pad_token_id"):
        tokenizer = getattr(tokenizer, "tokenizer", None)  # a processor wrapping a tokenizer
    g = Guard(trainer.model, tokenizer, evidence_dir=evidence_dir, ignore_index=ignore_index)
    if not isinstance(trainer.data_collator, GuardedCollator):
        trainer.data_collator = g.wrap_deferred(trainer.data_collator)

    class GuardCallback(TrainerCallback):
        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            g.refresh()
            if preflight != "off":
                try:
                    g.preflight(fail_on="error" if preflight == "raise" else "never")
                except Exception:
                    if preflight == "raise":
                        raise

    trainer.add_callback(GuardCallback())
    return g
