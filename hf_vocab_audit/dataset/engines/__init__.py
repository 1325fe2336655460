"""Where a dataset is scanned: one small interface (:class:`ScanEngine`), its error type, and the registry.

The dataset is resolved once (:func:`hf_vocab_audit.dataset.scan.resolve`: every split opened, its
columns planned, its scan context made) and handed to the engine, which returns one (summary, rows,
truncated) per split; :func:`scan` merges them. A new engine is a class with ``name`` and ``scan`` and
one line in ``ENGINES``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

from ...core.options import ScanOptions
from ...errors import AuditError
from ...facts import Facts
from ..scan import DatasetFacts, ResolvedScan
from ..summary import Summary

SplitResult = tuple[Summary, int, bool]  # the merged summary, rows scanned, stopped at --max-rows


class EngineError(AuditError):
    """An engine that does not exist, cannot start, or cannot take these options (exit 2, one line)."""


class ScanEngine(ABC):
    """One way to run the scan kernel over resolved splits."""

    name: ClassVar[str]

    def check(self, options: ScanOptions) -> None:  # noqa: B027 - a hook: most engines take any options
        """Refuse, before anything is read, what this engine cannot do (``EngineError``)."""

    @abstractmethod
    def scan(self, resolved: ResolvedScan, options: ScanOptions) -> list[SplitResult]:
        """One result per ``resolved.opened`` split, in order."""


class LocalEngine(ScanEngine):
    """Here: split after split, or up to ``num_proc`` splits in spawned processes."""

    name = "local"

    def scan(self, resolved: ResolvedScan, options: ScanOptions) -> list[SplitResult]:
        from ..scan import scan_local

        return scan_local(resolved, options)


class RayEngine(ScanEngine):
    """On Ray (``ray_address``, else ``RAY_ADDRESS``, else a local instance): pip install 'hf-vocab-audit[ray]'."""

    name = "ray"

    def check(self, options: ScanOptions) -> None:  # noqa: B027 - a hook: most engines take any options
        from ..ray_engine import require_ray

        require_ray()  # before reading anything: exit 2 with the install command

    def scan(self, resolved: ResolvedScan, options: ScanOptions) -> list[SplitResult]:
        from ..ray_engine import scan_with_ray

        return scan_with_ray(resolved.opened, resolved.contexts, options)


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
    from ..chat_formats import FORMATS, OFF

    engine_for(options)
    if options.chat_format is not None and options.chat_format not in (*FORMATS, OFF):
        raise AuditError(None, f"--chat-format {options.chat_format!r}: use one of {', '.join((*FORMATS, OFF))}")


def scan(facts: Facts, options: ScanOptions) -> DatasetFacts:
    """Scan every selected split of ``options.specs`` against ``facts``' model on ``options.engine``."""
    from ..scan import collect, resolve

    engine = engine_for(options)
    resolved = resolve(facts, options)
    return collect(resolved, engine.scan(resolved, options))


__all__ = ["ENGINES", "EngineError", "LocalEngine", "RayEngine", "ScanEngine", "check_scan", "engine_for", "scan"]
