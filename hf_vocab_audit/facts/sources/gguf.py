"""A GGUF file (llama.cpp's format), or a folder holding one and no config.json: metadata and tensor infos."""

from __future__ import annotations

import os
from pathlib import Path

from ...core.options import AuditOptions
from ..checkpoint import Facts
from . import FactsSource, SourceError


class GGUFSource(FactsSource):
    name = "gguf"

    @classmethod
    def accepts(cls, target: object) -> bool:
        from ..gguf import is_gguf_target

        return isinstance(target, (str, os.PathLike)) and is_gguf_target(Path(os.fspath(target)))

    def refuse(self, options: AuditOptions, fixing: bool = False) -> None:
        if fixing or options.weights or options.scan is not None or options.base is not None or options.target_kind:
            raise SourceError(str(self.target), "a GGUF is checked from its metadata only: --fix, --weights, "
                              "--dataset, --base and --target apply to a transformers checkpoint folder")
        if options.tokenizer is not None and options.source is None:
            raise SourceError(Path(os.fspath(options.tokenizer)), "--tokenizer with a GGUF target names the source's "
                              "tokenizer: pass --source HF_DIR too")

    def gather(self, options: AuditOptions) -> Facts:
        from ..gguf import gather_gguf

        assert self.path is not None
        return gather_gguf(self.path)
