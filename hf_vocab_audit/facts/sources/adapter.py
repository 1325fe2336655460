"""A PEFT adapter folder (adapter_config.json, no model of its own), audited against its base checkpoint."""

from __future__ import annotations

import os
from pathlib import Path

from ...core.options import AuditOptions
from ..checkpoint import Facts
from .folder import FolderSource


class AdapterSource(FolderSource):
    name = "adapter"

    @classmethod
    def accepts(cls, target: object) -> bool:
        from ..adapter import is_adapter

        return isinstance(target, (str, os.PathLike)) and is_adapter(Path(os.fspath(target)))

    def refuse(self, options: AuditOptions, fixing: bool = False) -> None:
        if options.source is not None:
            super().refuse(options, fixing)
        if options.tokenizer is not None and options.tokenizer_path is None:
            raise TypeError("a PEFT adapter folder is audited with its own tokenizer files, not a live tokenizer")

    def gather(self, options: AuditOptions) -> Facts:
        from ..adapter_base import gather_adapter

        assert self.path is not None
        return gather_adapter(self.path, options.base, options.tokenizer_path)
