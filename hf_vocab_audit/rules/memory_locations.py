"""Locations of findings on objects in memory: the rules name the files ``save_pretrained`` would write
(``tokenizer_config.json``, ``config.json``); for a live model and tokenizer those files do not exist, so a
finding's location names the object instead (``<tokenizer>``, ``<model>.config``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from ..core.findings import Finding
from ..facts.sources.memory import MODEL_FILE, TOKENIZER_FILE

OBJECTS = {
    "tokenizer_config.json": TOKENIZER_FILE,
    "tokenizer.json": TOKENIZER_FILE,
    "special_tokens_map.json": TOKENIZER_FILE,
    "added_tokens.json": TOKENIZER_FILE,
    "chat_template.jinja": f"{TOKENIZER_FILE}.chat_template",
    "config.json": f"{MODEL_FILE}.config",
    "generation_config.json": f"{MODEL_FILE}.generation_config",
}


def on_objects(findings: Iterable[Finding]) -> list[Finding]:
    """``findings`` with each file a live object has no such file of replaced by the object's name."""
    out = []
    for f in findings:
        name = OBJECTS.get(f.location.file or "")
        out.append(replace(f, location=replace(f.location, file=name, line=None)) if name else f)
    return out
