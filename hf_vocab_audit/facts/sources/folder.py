"""A local checkpoint folder (config.json, tokenizer files, weights): the default source for a path."""

from __future__ import annotations

import os

from ...core.options import AuditOptions
from ..checkpoint import Facts
from . import FactsSource, SourceError


class FolderSource(FactsSource):
    name = "folder"

    @classmethod
    def accepts(cls, target: object) -> bool:
        return isinstance(target, (str, os.PathLike))

    def refuse(self, options: AuditOptions, fixing: bool = False) -> None:
        if options.source is not None:
            raise SourceError(str(self.target), "--source HF_DIR applies to a GGUF target (check model.gguf "
                              "--source HF_DIR)")
        if options.base is not None:
            raise SourceError(self.path, "--base applies to a PEFT adapter folder (adapter_config.json) only")

    def gather(self, options: AuditOptions) -> Facts:
        from ..folder import gather

        folder = os.fspath(self.path or "")
        if options.tokenizer is None or options.tokenizer_path is not None:
            return gather(folder, options.tokenizer_path)
        from ..memory import tokenizer_facts  # a live tokenizer beside a folder's model

        return gather(folder, tokenizer_facts=tokenizer_facts(options.tokenizer))
