"""Facts of a PEFT adapter audit: the base checkpoint's facts (a local folder, ``--base DIR``, or a Hub id read
from headers through the Hub source) with the adapter's facts attached."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ...core.options import AuditOptions
from ...errors import AuditError
from ..checkpoint import Facts
from . import Repair
from .adapter import ADAPTER_CONFIG, ADAPTER_WEIGHTS, is_adapter, load_adapter
from .folder import FolderSource, gather

if TYPE_CHECKING:  # annotations only: reading a folder does not import the findings model
    pass

ADAPTER_FILES = (ADAPTER_CONFIG, *ADAPTER_WEIGHTS)


def gather_adapter(folder: Path, base: str | Path | None = None, tokenizer: str | Path | None = None,
                   hub_timeout: int | None = None) -> Facts:
    """The base's facts (its own tokenizer) plus the adapter in ``folder``; ``base`` overrides the config's.
    A Hub base is fetched within ``hub_timeout`` seconds (``--hub-timeout``; None: the default)."""
    adapter = load_adapter(folder)
    ref = str(base) if base is not None else adapter.base_ref
    config = folder / ADAPTER_CONFIG
    if not ref:
        raise AuditError(config, 'has no "base_model_name_or_path": pass --base DIR')
    base_dir = Path(ref)
    if base_dir.is_dir():
        if is_adapter(base_dir):
            raise AuditError(base_dir, "is itself an adapter: pass the base checkpoint with --base DIR")
        return replace(gather(base_dir, tokenizer), adapter=adapter)
    from .hub import checkout, parse_hub_ref

    hub = None if base is not None else parse_hub_ref(ref)
    if hub is None:
        where = "--base" if base is not None else f"{ADAPTER_CONFIG} base_model_name_or_path"
        raise AuditError(config, f"the base {ref!r} ({where}) is not a local folder or a Hub id: pass --base DIR")
    with checkout(hub, hub_timeout) as co:
        facts = gather(co.folder, tokenizer, tensors_from=lambda _folder: co.tensors)
    return replace(facts, adapter=adapter)


class AdapterSource(FolderSource):
    name = "adapter"
    repair = Repair.EXPLAIN  # fix.adapter_refusal: the base is not the adapter's to change

    @classmethod
    def accepts(cls, target: object) -> bool:
        return isinstance(target, (str, os.PathLike)) and is_adapter(Path(os.fspath(target)))

    def refuse(self, options: AuditOptions, fixing: bool = False) -> None:
        if options.source is not None:
            super().refuse(options, fixing)
        if options.tokenizer is not None and options.tokenizer_path is None:
            raise TypeError("a PEFT adapter folder is audited with its own tokenizer files, not a live tokenizer")

    def gather(self, options: AuditOptions) -> Facts:
        assert self.path is not None
        return gather_adapter(self.path, options.base, options.tokenizer_path, options.hub_timeout)
