"""``guard_trainer``: a transformers ``Trainer`` with its collator guarded and a preflight at train start.

No ``TrainerCallback`` event sees the batch, and accelerate moves batches to the device while prefetching,
so the batch check lives in the collator (it runs in the DataLoader workers). Because of the prefetch, a
bad batch is not raised in the collator: it carries its verdict to a forward pre-hook, which writes its
evidence and raises when that batch reaches the model, at the step that would have crashed (a bad batch
prefetched behind it never runs and leaves no evidence). The callback runs the preflight and
re-reads the limits when training begins (after any resize the script did).
"""

from __future__ import annotations

from typing import Any

from .core import Guard, GuardedCollator

NO_TOKENIZER = ("hf-vocab-audit guard: no tokenizer found (the Trainer has no processing_class and its data "
                "collator holds none): the preflight checks the model alone, and a batch error cannot name its "
                "cause. Pass it: guard_trainer(trainer, tokenizer=tokenizer)")


def find_tokenizer(trainer: Any) -> Any:
    """The tokenizer the Trainer's batches come from: its ``processing_class`` (``tokenizer`` before
    transformers 4.46), else the one its data collator holds (DataCollatorWithPadding and kin), else None."""
    for holder in (trainer, getattr(trainer, "data_collator", None)):
        for name in ("processing_class", "tokenizer"):
            tok = getattr(holder, name, None) if holder is not None else None
            if tok is not None and not hasattr(tok, "pad_token_id"):
                tok = getattr(tok, "tokenizer", None)  # a processor wrapping a tokenizer
            if tok is not None:
                return tok
    return None


def guard_trainer(trainer: Any, *, tokenizer: Any = None, preflight: str = "raise", evidence_dir: Any = True,
                  ignore_index: int = -100, keep_runs: int | None = 5) -> Guard:
    """Guard ``trainer``: wrap ``trainer.data_collator``, add a callback that runs the preflight.

    ``tokenizer``: the tokenizer the batches come from (default: found on the Trainer or its collator; when
    none is found the guard says so once, at train start, and the preflight checks the model alone).
    ``preflight``: "raise" (fail like ``check``), "warn" (print the report only) or "off".
    """
    import sys

    from transformers import TrainerCallback

    if preflight not in ("raise", "warn", "off"):
        raise ValueError(f"preflight must be 'raise', 'warn' or 'off', not {preflight!r}")
    if tokenizer is None:
        tokenizer = find_tokenizer(trainer)
    g = Guard(trainer.model, tokenizer, evidence_dir=evidence_dir, ignore_index=ignore_index, keep_runs=keep_runs)
    if not isinstance(trainer.data_collator, GuardedCollator):
        trainer.data_collator = g.wrap_deferred(trainer.data_collator)

    warned: list[bool] = []  # said once per guard, not once per train() call

    class GuardCallback(TrainerCallback):
        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            g.refresh()
            if g.tokenizer is None and not warned:
                warned.append(True)
                print(NO_TOKENIZER, file=sys.stderr)
            if preflight != "off":
                try:
                    g.preflight(fail_on="error" if preflight == "raise" else "never")
                except Exception:
                    if preflight == "raise":
                        raise

    trainer.add_callback(GuardCallback())
    return g
