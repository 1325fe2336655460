"""Root causes: one story for the findings one mistake explains.

One missing ``resize_token_embeddings`` gives HVA101, HVA102 and an HVA206 per chat marker; a pad token
added without a resize adds HVA201 for each file that names it. A reader of a CI log should see the cause
and the one command that fixes it first, then the evidence. A :class:`Cause` is that story; each finding it
explains carries its ``id`` (``Finding.cause``). Findings and exit codes do not change.
"""

from __future__ import annotations

from dataclasses import dataclass

from .codec import JsonForm


@dataclass(frozen=True)
class Cause(JsonForm):
    """``id`` is stable across runs (a kind plus what it is about, e.g. ``tokens-added-without-resize``);
    ``title`` is one line, ``story`` says what happened and what breaks, ``fix`` is the one command or code
    change, ``findings`` counts the findings it explains and ``codes`` lists their rules."""

    id: str
    title: str
    story: str
    fix: str
    codes: tuple[str, ...]
    findings: int
