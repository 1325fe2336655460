"""What ``--fix`` will do to a checkpoint: one :class:`CheckpointRepair` (tensors to grow, rows to
re-initialise, JSON edits, tokenizer edits) and the findings it leaves :class:`Unfixed`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..core.findings import AppliedFix, Unfixed


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
class CheckpointRepair:
    rows_before: int | None
    rows_after: int | None
    grow: dict[str, int]  # tensor name -> new size of its vocabulary dimension
    trained_rows: int | None  # rows whose mean seeds the new rows (padding past the tokenizer excluded)
    json_edits: tuple[JsonEdit, ...]
    new_tokens: tuple[str, ...]  # special tokens to add to tokenizer.json
    applied: tuple[AppliedFix, ...]
    unfixed: tuple[Unfixed, ...]
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

    @property
    def changes_weights(self) -> bool:
        return bool(self.grow or self.reinit)

    @property
    def edited_files(self) -> set[str]:
        files = {e.file for e in self.json_edits}
        if self.new_tokens:
            files.add("tokenizer.json")
        return files
