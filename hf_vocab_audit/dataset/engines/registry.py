"""The scan engines by name (``--engine``): a new engine is a :class:`~hf_vocab_audit.dataset.engines.ScanEngine`
subclass and one line in ``ENGINES``."""

from __future__ import annotations

from ...core.options import ScanOptions
from ...errors import AuditError
from ...facts import Facts
from ...facts.trainable_rows import FrozenRows
from ..chat_formats import FORMATS, OFF
from ..scan import DatasetFacts, collect, resolve
from . import EngineError, ScanEngine
from .local import LocalEngine
from .ray import RayEngine

ENGINES: dict[str, type[ScanEngine]] = {
    LocalEngine.name: LocalEngine,
    RayEngine.name: RayEngine,
}


def engine_for(options: ScanOptions) -> ScanEngine:
    """The engine ``options.engine`` names, its own checks passed (nothing is read)."""
    cls = ENGINES.get(options.engine)
    if cls is None:
        raise EngineError(None, f"unknown engine {options.engine!r} ({' or '.join(ENGINES)})")
    engine = cls()
    engine.check(options)
    return engine


def check_scan(options: ScanOptions) -> None:
    """Refuse, before any file is read, an unknown engine or one that cannot run here, and a chat format
    that does not exist (a format the columns do not hold is found when the splits are opened)."""
    engine_for(options)
    if options.chat_format is not None and options.chat_format not in (*FORMATS, OFF):
        raise AuditError(None, f"--chat-format {options.chat_format!r}: use one of {', '.join((*FORMATS, OFF))}")


def scan(facts: Facts, options: ScanOptions, frozen: FrozenRows | None = None) -> DatasetFacts:
    """Scan every selected split of ``options.specs`` against ``facts``' model on ``options.engine``; the ids of
    ``frozen`` rows (``--weights`` with an adapter) are counted where the data uses them."""
    engine = engine_for(options)
    resolved = resolve(facts, options, frozen)
    return collect(resolved, engine.scan(resolved, options))


__all__ = ["ENGINES", "check_scan", "engine_for", "scan"]
