"""Where facts come from: one small interface (:class:`FactsSource`) and its own error type.

A source says whether it takes a target (``accepts``, from the path or object alone: a stat, no read),
refuses the options that cannot apply to its kind of target (``refuse``, before anything is read),
gets ready (``open``: a Hub checkout; it returns the folder whose ``hf-vocab-audit.toml`` applies) and
gathers one :class:`~hf_vocab_audit.facts.checkpoint.Facts` (``gather``). The sources are listed once,
in :mod:`.registry`; a new one is a class there and one line in ``SOURCES``.

A source also declares what the one audit pipeline (``audit.audit_source``) does with its facts, so that the
pipeline never asks what kind of target it holds: the rule scopes run on them besides the static rules
(``scopes``), the scopes of the analyses its facts cannot feed and why (``cannot``), the checkpoint rules whose
meaning does not carry over and why (``unsupported``), whether a target with nothing to examine is refused
(``refuse_empty``), what its facts lack by design (``by_design``: not coverage gaps) and how ``--fix`` treats it
(``repair``). Where its findings are placed (a GGUF's metadata
keys, an adapter's base files, objects in memory) is its locator, in ``rules.locators``.
"""

from __future__ import annotations

import enum
import os
from abc import ABC, abstractmethod
from collections.abc import Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from ...core.options import AuditOptions
from ...core.scope import Scope
from ...core.source import Source
from ...errors import AuditError

if TYPE_CHECKING:  # checkpoint imports sources.adapter (AdapterFacts): no loop at import time
    from ..checkpoint import Facts
    from ..requirements import GapKind


class SourceError(AuditError):
    """A target no source takes, or options its source cannot apply (exit 2, one line, like every AuditError)."""


class Repair(enum.Enum):
    """What ``--fix`` does with a kind of target."""

    COPY = "copy"  # writes a repaired copy of the folder (fix.repair)
    EXPLAIN = "explain"  # writes nothing and says why in the audit (a PEFT adapter: its base is not its to change)
    REFUSED = "refused"  # ``refuse`` turns --fix down before anything is read (the Hub, a GGUF, live objects)


class FactsSource(ABC):
    """One kind of target (a folder, a Hub commit, live objects, an adapter, a GGUF file)."""

    name: ClassVar[str]
    origin: ClassVar[Source] = Source.FOLDER  # what the report says the target was
    lines: ClassVar[bool] = True  # record JSON line numbers (the files stay on disk after the audit)
    remote: ClassVar[bool] = False  # reaches the network (the gate's targets; ``audit()`` takes local ones)
    scopes: ClassVar[tuple[Scope, ...]] = ()  # rule scopes run on the facts besides Scope.STATIC (a GGUF's own)
    cannot: ClassVar[Mapping[Scope, str]] = {}  # analyses' scopes these facts cannot feed: their rules are skipped
    unsupported: ClassVar[Mapping[str, str]] = {}  # rule code -> why that checkpoint rule means nothing here
    refuse_empty: ClassVar[bool] = True  # refuse a target with nothing to examine (rules.coverage.ensure_auditable)
    repair: ClassVar[Repair] = Repair.COPY

    def __init__(self, target: object) -> None:
        self.target = target

    @classmethod
    @abstractmethod
    def accepts(cls, target: object) -> bool:
        """Whether this source reads ``target`` (from the path or object alone: no file is read)."""

    def refuse(self, options: AuditOptions, fixing: bool = False) -> None:  # noqa: B027 - a hook
        """Raise :class:`SourceError` for options this kind of target cannot take (nothing is read)."""

    def open(self, stack: ExitStack) -> Path | None:
        """Get ready to gather (``stack`` closes what this opens); the folder whose settings file applies."""
        path = self.path
        return path if path is not None and path.is_dir() else None

    @abstractmethod
    def gather(self, options: AuditOptions) -> Facts:
        """The target's facts."""

    def by_design(self, facts: Facts) -> frozenset[GapKind]:
        """What ``facts`` lack by design: a rule skipped for want of it is not a coverage gap."""
        return frozenset()

    @property
    def path(self) -> Path | None:
        return Path(os.fspath(self.target)) if isinstance(self.target, (str, os.PathLike)) else None

    @property
    def label(self) -> str:
        """The report's target."""
        return str(self.target)


__all__ = ["FactsSource", "Repair", "SourceError"]
