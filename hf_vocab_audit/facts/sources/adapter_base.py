"""Facts of a PEFT adapter audit: the base checkpoint's facts (a local folder, ``--base DIR``, or a Hub id read
from headers through the Hub source) with the adapter's facts attached."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ...core.options import AuditOptions
from ...errors import AuditError
from ..checkpoint import Facts
from .adapter import ADAPTER_CONFIG, ADAPTER_WEIGHTS, is_adapter, load_adapter
from .folder import FolderSource, gather

if TYPE_CHECKING:  # annotations only: reading a folder does not import the findings model
    from ...core.findings import Finding

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


def relocate_base_findings(findings: list[Finding], facts: Facts) -> list[Finding]:
    """Point the base's findings at the base's files (the report's target is the adapter folder): a path relative
    to the adapter, so SARIF / GitHub annotations and line numbers land in the right file. HVA8xx stay put."""
    if facts.adapter is None or not facts.model_dir.is_dir():
        return findings
    out = []
    for f in findings:
        if f.code.startswith("HVA8") or not f.location.file or f.location.file in ADAPTER_FILES:
            out.append(f)
            continue
        rel = os.path.relpath(facts.model_dir / f.location.file, facts.adapter.folder)
        out.append(dataclasses.replace(f, location=dataclasses.replace(f.location, file=Path(rel).as_posix())))
    return out


class AdapterSource(FolderSource):
    name = "adapter"

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
