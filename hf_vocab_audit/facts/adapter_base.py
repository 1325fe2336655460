"""Facts of a PEFT adapter audit: the base checkpoint's facts (a local folder, ``--base DIR``, or a Hub id read
from headers through the Hub source) with the adapter's facts attached."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ..errors import AuditError
from . import Facts, gather
from .adapter import ADAPTER_CONFIG, is_adapter, load_adapter


def gather_adapter(folder: Path, base: str | Path | None = None, tokenizer: str | Path | None = None) -> Facts:
    """The base's facts (its own tokenizer) plus the adapter in ``folder``; ``base`` overrides the config's."""
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
    with checkout(hub) as co:
        facts = gather(co.folder, tokenizer, tensors_from=lambda _folder: co.tensors)
    return replace(facts, adapter=adapter)
