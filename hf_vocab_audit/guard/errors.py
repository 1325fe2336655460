"""``BatchIndexError``: the guard's verdict on a batch, as an ``IndexError`` a training loop already expects.

The DataLoader re-raises a worker's exception by calling its class with one string (the worker's whole
traceback), so the error must be constructible from that string alone: the structured fields travel in a
final ``hva-guard: {json}`` line of the message and are parsed back from it.
"""

from __future__ import annotations

import json
from typing import Any

MARKER = "hva-guard: "


class BatchIndexError(IndexError):
    """A batch holds a value the model would index out of range with (or a malformed packed batch).

    Attributes (``None`` when unknown): ``code`` (HVAnnn), ``key``, ``rank``, ``worker``, ``batch``,
    ``row``, ``position``, ``value``, ``limit``, ``count`` (bad values), ``cause``, ``fix``,
    ``evidence`` (the saved batch file), ``violations`` (every finding in the batch, as dicts).
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.details: dict[str, Any] = _parse(message)
        first = (self.details.get("violations") or [{}])[0]
        self.code: str | None = first.get("code")
        self.key: str | None = first.get("key")
        self.row: int | None = first.get("row")
        self.position: int | None = first.get("position")
        self.value: Any = first.get("value")
        self.limit: int | None = first.get("limit")
        self.count: int | None = first.get("count")
        self.cause: str | None = first.get("cause")
        self.fix: str | None = first.get("fix")
        self.rank: int | None = self.details.get("rank")
        self.worker: int | None = self.details.get("worker")
        self.batch: int | None = self.details.get("batch")
        self.evidence: str | None = self.details.get("evidence")
        self.violations: list[dict[str, Any]] = list(self.details.get("violations") or [])

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self),))


def _parse(message: str) -> dict[str, Any]:
    at = message.rfind(MARKER)
    if at < 0:
        return {}
    line = message[at + len(MARKER):].split("\n", 1)[0]
    try:
        data = json.loads(line)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


class PreflightError(RuntimeError):
    """``preflight()`` found errors in the in-memory model and tokenizer (the static rules, as ``check``)."""

    def __init__(self, message: str, report: Any = None) -> None:
        super().__init__(message)
        self.report = report
