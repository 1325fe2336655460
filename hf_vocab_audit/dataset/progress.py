"""The progress line of a dataset scan, on standard error."""

from __future__ import annotations

import sys
import time
from typing import Any

from .summary import Summary


class ProgressBar:
    """A rich progress line on standard error: rows, rows/s and tokens/s."""

    def __init__(self, label: str, total: int | None):
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self.progress = Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[info]}"),
                                 TimeElapsedColumn(), transient=True, console=_stderr_console())
        self.task = self.progress.add_task(label, total=total, info="")
        self.start = time.perf_counter()
        self.rows = 0

    def advance(self, n: int, summary: Summary) -> None:
        self.rows += n
        tokens = sum(s.tokens + (s.values if s.max_length is not None else 0) for s in summary.stats.values())
        dt = max(time.perf_counter() - self.start, 1e-9)
        self.progress.update(self.task, advance=n,
                             info=f"{self.rows:,} rows  {self.rows / dt:,.0f} rows/s  {tokens / dt:,.0f} tokens/s")

    def restart(self) -> None:
        """Back to row 0 (the Ray engine rescans a split with another reader)."""
        self.rows, self.start = 0, time.perf_counter()
        self.progress.update(self.task, completed=0, info="")

    def __enter__(self) -> ProgressBar:  # noqa: PYI034
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()


def _stderr_console() -> Any:
    from rich.console import Console

    return Console(file=sys.stderr)
