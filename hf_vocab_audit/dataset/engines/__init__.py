"""Where a dataset is scanned: one small interface (:class:`ScanEngine`), its error type, and the registry.

The dataset is resolved once (:func:`hf_vocab_audit.dataset.scan.resolve`: every split opened, its
columns planned, its scan context made) and handed to the engine, which returns one (summary, rows,
truncated) per split; :func:`.registry.scan` merges them. A new engine is a class with ``name`` and
``scan`` and one line in ``ENGINES`` (:mod:`.registry`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

from ...core.options import ScanOptions
from ...errors import AuditError
from ..scan import ResolvedScan
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


__all__ = ["EngineError", "ScanEngine", "SplitResult"]
