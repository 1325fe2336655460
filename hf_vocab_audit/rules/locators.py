"""Where a source's findings are placed: one locator per facts source, run on the findings of its own rules and of
the analyses whose findings are in the target's files (``rules.analyses.Analysis.located``).

The rules name the files of a transformers checkpoint (``tokenizer_config.json bos_token``); a source whose
target is not such a folder moves them where its user looks: a GGUF's metadata keys, an adapter's base files
(relative to the adapter folder), the live objects ``audit(model=...)`` was given. Messages are rewritten here,
never in ``facts``. A new source with its own places is one function and one line in ``LOCATORS``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from ..core.findings import Finding
from ..core.source import Source
from ..facts import Facts
from ..facts.llama_cpp_tables import SPECIAL_ID_KEYS
from ..facts.sources import FactsSource
from ..facts.sources.adapter_base import ADAPTER_FILES, AdapterSource
from ..facts.sources.gguf import CHAT_TEMPLATE, TOKENS, GGUFSource
from ..facts.sources.memory import MemorySource
from .memory_locations import on_objects

Locator = Callable[[Facts, Sequence[Finding]], list[Finding]]


def in_gguf(facts: Facts, findings: Sequence[Finding]) -> list[Finding]:
    """Findings of the checkpoint rules, located in the GGUF: file + metadata key instead of the HF file
    names a checkpoint's findings carry (``tokenizer``'s ``bos_token`` is ``tokenizer.ggml.bos_token_id``)."""
    gf = facts.gguf
    if gf is None:
        return list(findings)
    out = []
    for f in findings:
        loc = f.location
        message = f.message
        if loc.file in ("tokenizer", "tokenizer_config.json") and loc.key and loc.key.endswith("_token"):
            role = loc.key.removesuffix("_token")
            key = SPECIAL_ID_KEYS.get(role, loc.key)
            message = message.replace(f"{loc.file} {loc.key}", f"{gf.file} {key}", 1)
            loc = replace(loc, file=gf.file, key=key)
        elif loc.file == gf.file and loc.key is None and f.code in ("HVA205", "HVA206"):
            loc = replace(loc, key=CHAT_TEMPLATE)
        elif loc.file == gf.file and loc.key is None and f.code == "HVA207":
            loc = replace(loc, key=TOKENS)
        elif loc.tensor in ("token_embd.weight", "output.weight") and loc.key is None:
            loc = replace(loc, key=TOKENS)
        if loc.token == "":
            loc = replace(loc, token=None)
        if f.fix is not None or f.code in FIXED_IN_HF:  # --fix repairs HF folders, not GGUF files
            f = replace(f, fix=None, hint=FIX_IN_HF)
        out.append(replace(f, location=loc, message=message))
    return out


FIXED_IN_HF = ("HVA101", "HVA102", "HVA201", "HVA205", "HVA206", "HVA207")
FIX_IN_HF = ("fix the HF checkpoint the GGUF came from (`hf-vocab-audit check HF_DIR --fix` grows its embeddings; "
             "`--target gguf` says what the converter will do) and convert it again")


def in_base(facts: Facts, findings: Sequence[Finding]) -> list[Finding]:
    """Point the base's findings at the base's files (the report's target is the adapter folder): a path relative
    to the adapter, so SARIF / GitHub annotations and line numbers land in the right file. HVA8xx stay put."""
    if facts.adapter is None or not facts.model_dir.is_dir():
        return list(findings)
    out = []
    for f in findings:
        if f.code.startswith("HVA8") or not f.location.file or f.location.file in ADAPTER_FILES:
            out.append(f)
            continue
        rel = os.path.relpath(facts.model_dir / f.location.file, facts.adapter.folder)
        out.append(replace(f, location=replace(f.location, file=Path(rel).as_posix())))
    return out


def on_memory_objects(facts: Facts, findings: Sequence[Finding]) -> list[Finding]:
    """Findings of live objects name the object (``<tokenizer>``), not the file ``save_pretrained`` would write."""
    return on_objects(findings)


def in_place(facts: Facts, findings: Sequence[Finding]) -> list[Finding]:
    """A folder's findings are where the rules put them."""
    return list(findings)


LOCATORS: dict[type[FactsSource], Locator] = {
    GGUFSource: in_gguf,
    AdapterSource: in_base,
    MemorySource: on_memory_objects,
}


def locator_of(source: FactsSource) -> Locator:
    """The locator of ``source``'s class, or of the nearest class it derives from; else a source of live objects
    (``origin`` MEMORY, whatever its class) names the objects, as its causes do, and a folder's stay in place."""
    default = on_memory_objects if source.origin is Source.MEMORY else in_place
    return next((LOCATORS[cls] for cls in type(source).__mro__ if cls in LOCATORS), default)


__all__ = ["FIX_IN_HF", "FIXED_IN_HF", "LOCATORS", "Locator", "in_base", "in_gguf", "locator_of"]
