"""The one exception that means "the audit could not run" (exit code 2)."""

from __future__ import annotations

from pathlib import Path


class AuditError(Exception):
    """Bad input: names the file and the problem in one line."""

    def __init__(self, path: str | Path | None, problem: str):
        self.path = str(path) if path is not None else None
        self.problem = problem
        super().__init__(f"{self.path}: {problem}" if self.path else problem)
