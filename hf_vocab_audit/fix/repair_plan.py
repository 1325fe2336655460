"""What ``--fix`` will do to a checkpoint: one :class:`CheckpointRepair` (tensors to grow, rows to
re-initialise, JSON edits, tokenizer edits) and the findings it leaves alone (:class:`LeftAlone`, reported as
:class:`Unfixed`).

The plan is made once per run. The one thing the route that writes it can take away is the re-initialised
rows (the transformers route does not re-initialise): :meth:`CheckpointRepair.without_reinit` narrows the
plan to what that route can do, without planning again.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..core.findings import AppliedFix, Finding, Unfixed
from ..io.safetensors_header import TensorInfo


@dataclass(frozen=True)
class JsonEdit:
    """Set ``key`` (dotted path) in ``file``; ``include`` keeps a list and makes sure it holds ``value`` (every
    item of ``value`` when it is a tuple: the list's own items first, then the new ones)."""

    file: str
    key: str
    value: Any
    include: bool = False

    def apply(self, data: dict[str, Any]) -> None:
        *parents, last = self.key.split(".")
        node = data
        for part in parents:
            node = node.setdefault(part, {})
        current = node.get(last)
        if self.include and isinstance(self.value, tuple):
            have = list(current) if isinstance(current, list) else []
            node[last] = have + [v for v in self.value if v not in have]
        elif self.include and isinstance(current, list):
            node[last] = [self.value] + [v for v in current if v != self.value]
        else:
            node[last] = self.value


@dataclass(frozen=True)
class BaseRowSource:
    """Where a regrown tensor's new rows come from: ``info`` in the base checkpoint's weight file ``path``
    (its rows past the fine-tune's are copied bit for bit, by offset)."""

    path: Path
    info: TensorInfo


@dataclass(frozen=True)
class LeftAlone:
    """A finding the plan leaves alone, and why. The finding itself is kept: whether the other fixes resolved
    it is decided later by its rule code and location (``fix.settle``), never by its message."""

    finding: Finding
    reason: str

    @property
    def code(self) -> str:
        return self.finding.code

    @property
    def message(self) -> str:
        return self.finding.message

    def as_unfixed(self) -> Unfixed:
        """The report's form."""
        return Unfixed(self.finding.code, self.finding.message, self.reason)


@dataclass(frozen=True)
class ReinitSlot:
    """A finding whose fix re-initialises rows, in its place among the findings left alone: applied
    (``applied``) unless the plan is narrowed to a route that does not re-initialise; or refused already
    (``refused`` says why; narrowing gives the route's reason instead)."""

    finding: Finding
    applied: AppliedFix | None = None
    refused: str | None = None


@dataclass(frozen=True)
class CheckpointRepair:
    rows_before: int | None
    rows_after: int | None
    grow: dict[str, int]  # tensor name -> new size of its vocabulary dimension
    trained_rows: int | None  # rows whose mean seeds the new rows (padding past the tokenizer excluded)
    json_edits: tuple[JsonEdit, ...]
    new_tokens: tuple[str, ...]  # special tokens to add to tokenizer.json
    applied: tuple[AppliedFix, ...]
    # the findings left alone, in the order they are reported, with the re-initialising ones in their place
    left: tuple[LeftAlone | ReinitSlot, ...]
    notes: tuple[str, ...] = field(default=())
    # tensor name -> rows set to the mean of its trained rows (--unsafe-fixes, HVA601/HVA602)
    reinit: dict[str, tuple[int, ...]] = field(default_factory=dict)
    # tensor name -> rows left out of that mean besides the reinitialised ones (untrained, low-norm, pad)
    reinit_exclude: dict[str, tuple[int, ...]] = field(default_factory=dict)
    # the applied fixes whose findings must be gone from the output's audit (re-initialised rows stay
    # "untrained" to HVA601: their bytes are checked instead)
    verify_gone: tuple[AppliedFix, ...] = ()
    # ids added to generation_config.json's suppress_tokens (read back before the rename)
    suppress: tuple[int, ...] = ()
    # tensor name -> the base's tensor its grown rows are copied from (``check FT --base BASE --fix``)
    base_rows: dict[str, BaseRowSource] = field(default_factory=dict)
    # whole files written into the output (relative path -> bytes): a chat template copied where it is read
    files: tuple[tuple[str, bytes], ...] = ()

    @property
    def unfixed(self) -> tuple[LeftAlone, ...]:
        """The findings this plan leaves alone, in order."""
        out = []
        for s in self.left:
            if isinstance(s, LeftAlone):
                out.append(s)
            elif s.refused is not None:  # a re-initialisation refused on its own account
                out.append(LeftAlone(s.finding, s.refused))
        return tuple(out)

    def without_reinit(self, reason: str) -> CheckpointRepair:
        """This plan with no row re-initialised: each re-initialising finding left alone for ``reason`` (in
        the place it has among the others), its applied fix withdrawn. A re-initialisation is a fix of its own
        (``plan._plan_edits`` holds rules to that), so nothing else in the plan depends on it."""
        slots = [s for s in self.left if isinstance(s, ReinitSlot)]
        if not slots:
            return self
        withdrawn = {s.applied for s in slots if s.applied is not None}
        return replace(self, reinit={}, reinit_exclude={},
                       applied=tuple(a for a in self.applied if a not in withdrawn),
                       left=tuple(LeftAlone(s.finding, reason) if isinstance(s, ReinitSlot) else s for s in self.left))

    @property
    def changes_weights(self) -> bool:
        return bool(self.grow or self.reinit)

    @property
    def edited_files(self) -> set[str]:
        files = {e.file for e in self.json_edits} | {name for name, _ in self.files}
        if self.new_tokens:
            files.add("tokenizer.json")
        return files
