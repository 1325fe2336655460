"""``--fix`` on a PEFT adapter: every adapter finding needs trained rows that do not exist or a change to the
base, so no adapter is written; the report lists each finding with the reason and what to do instead."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from ..audit import audit
from ..core.findings import FixResult, Unfixed
from ..core.report import Report

REASONS = {
    "HVA801": "the adapter is consistent; the base must be resized before loading, and --fix never modifies the "
              "base: call base.resize_token_embeddings({resize_to}) before PeftModel.from_pretrained",
    "HVA802": "the saved rows are the trained ones and --fix never shrinks a matrix: resize the base to the saved "
              "row count instead of len(tokenizer)",
    "HVA803": "no trained rows exist for these tokens in the adapter: growing the base would only make up "
              "untrained rows; retrain with modules_to_save or trainable_token_indices",
    "HVA804": "the tokens past the saved rows were never trained with this adapter: save the tokenizer it was "
              "trained with, or retrain",
    "HVA805": "the indices name rows that do not exist: fix trainable_token_indices and retrain",
}


def refuse_adapter_fix(folder: Path, *, base: str | Path | None = None, tokenizer: str | Path | None = None,
                       select: Iterable[str] | None = None, ignore: Iterable[str] | None = None) -> Report:
    """The adapter's audit, with a ``fix`` section that writes nothing and says why for each finding."""
    report = audit(folder, base=base, tokenizer=tokenizer, select=select, ignore=ignore)
    unfixed: list[Unfixed] = []
    for f in report.findings:
        if f.code in REASONS:
            reason = REASONS[f.code].format(**{k: v for k, v in f.details.items() if isinstance(v, int)})
            unfixed.append(Unfixed(f.code, f.message, reason))
    notes = ["no adapter written: an adapter's embedding rows are trained weights; --fix cannot make up trained "
             "rows or change the base" if unfixed else "the adapter is consistent with its base: nothing to write"]
    return replace(report, fix=FixResult(str(folder), "(nothing written)", "refused", None, None, tuple(unfixed),
                                         tuple(notes), None))
