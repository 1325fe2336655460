"""The live model and tokenizer objects of a running script (nothing is saved)."""

from __future__ import annotations

import os

from ...core.findings import Source
from ...core.options import AuditOptions
from ..checkpoint import Facts
from . import FactsSource, SourceError


class MemorySource(FactsSource):
    name = "memory"
    origin = Source.MEMORY
    lines = False  # objects, not files

    @classmethod
    def accepts(cls, target: object) -> bool:
        return target is not None and not isinstance(target, (str, os.PathLike))

    def refuse(self, options: AuditOptions, fixing: bool = False) -> None:
        if options.base is not None:
            raise SourceError(None, "--base applies to a PEFT adapter folder (adapter_config.json) only")

    def gather(self, options: AuditOptions) -> Facts:
        from ..memory import facts_from_memory

        return facts_from_memory(self.target, options.tokenizer)

    @property
    def label(self) -> str:
        from ..memory import model_label

        return model_label(self.target)
