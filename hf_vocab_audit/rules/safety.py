"""HVA0xx: files the audit refused to execute or read."""

from __future__ import annotations

from collections.abc import Iterator

from ..core.findings import Location, Severity
from ..facts import Facts
from .registry import Hit, rule


@rule("HVA001", "unsafe-pickle", Severity.ERROR)
def unsafe_pickle(facts: Facts) -> Iterator[Hit]:
    """A `.bin` weights file is a pickle that `torch.load(weights_only=True)` refuses to load.

    Why:
    Pickle can run arbitrary code on load. `weights_only=True` only accepts tensors and plain
    containers; a file it refuses may carry a payload (a `__reduce__` that runs a command). The audit
    never unpickles it, so its tensors are unknown.

    Fix:
    Do not load the file with `weights_only=False`. Ask for safetensors weights, or re-export the
    model from a trusted source with `save_pretrained(safe_serialization=True)`.
    """
    refused = list(facts.tensors.refused) if facts.tensors is not None else []
    if facts.adapter is not None:  # a PEFT adapter's adapter_model.bin is read the same way
        refused.extend(facts.adapter.refused)
    for r in refused:
        yield Hit(f"{r.file}: {r.reason}", Location(file=r.file))


@rule("HVA002", "remote-code-reference", Severity.WARNING)
def remote_code_reference(facts: Facts) -> Iterator[Hit]:
    """config.json or tokenizer_config.json names custom code (`auto_map`) that was not run.

    Why:
    Loading such a model needs `trust_remote_code=True`, which executes Python from the repository.
    The audit never does; its facts come from the files alone, so custom classes may behave differently.

    Fix:
    Review the referenced code before trusting it, or use an architecture transformers ships.
    """
    sources = [("config.json", facts.config.auto_map)]
    if facts.tokenizer is not None:
        sources.append(("tokenizer_config.json", facts.tokenizer.auto_map))
    for file, auto_map in sources:
        if auto_map:
            refs = sorted(f"{k}={v}" for k, v in auto_map.items())[:4]
            yield Hit(f"{file} auto_map references custom code: {', '.join(refs)}", Location(file=file, key="auto_map"))
