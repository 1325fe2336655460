"""The local engine: the scan kernel here, split after split, or in spawned processes (``num_proc``)."""

from __future__ import annotations

from ...core.options import ScanOptions
from ..scan import ResolvedScan, scan_local
from . import ScanEngine, SplitResult


class LocalEngine(ScanEngine):
    """Here: split after split, or up to ``num_proc`` splits in spawned processes."""

    name = "local"

    def scan(self, resolved: ResolvedScan, options: ScanOptions) -> list[SplitResult]:
        return scan_local(resolved, options)
