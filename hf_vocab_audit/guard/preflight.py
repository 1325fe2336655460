"""``preflight()``: the static rules on the in-memory model and tokenizer (nothing is saved)."""

from __future__ import annotations

from typing import Any


def audit_in_memory(model: Any, tokenizer: Any) -> Any:
    """The :class:`~hf_vocab_audit.Report` of the static rules on a live (model, tokenizer) pair."""
    from ..audit import audit

    return audit(model=model, tokenizer=tokenizer)
