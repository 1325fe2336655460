"""``preflight()``: the static rules on the in-memory model and tokenizer."""

from __future__ import annotations

import inspect
import tempfile
from typing import Any


def audit_in_memory(model: Any, tokenizer: Any) -> Any:
    """The :class:`~hf_vocab_audit.Report` of the static rules on a live (model, tokenizer) pair."""
    from ..audit import audit

    if "model" in inspect.signature(audit).parameters:
        return audit(model=model, tokenizer=tokenizer)
    # Fallback until the in-memory audit lands: audit a save_pretrained copy (writes the weights once).
    with tempfile.TemporaryDirectory(prefix="hf-vocab-audit-preflight-") as tmp:
        model.save_pretrained(tmp)
        if tokenizer is not None:
            tokenizer.save_pretrained(tmp)
        return audit(tmp)
