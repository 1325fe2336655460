"""HVA0xx: files the audit refused to execute, read or obey."""

from __future__ import annotations

from collections.abc import Iterator

from ..core.findings import Location, Severity
from ..core.target_settings import IgnoredSettings
from ..facts import Facts
from .registry import Hit, Scope, rule

MAX_KEYS_NAMED = 12  # a hostile file may hold thousands of keys: the message names the first ones
MAX_KEY_CHARS = 40


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


@rule("HVA003", "target-settings-ignored", Severity.WARNING, scope=Scope.SETTINGS)
def target_settings_ignored(ignored: tuple[IgnoredSettings, ...]) -> Iterator[Hit]:
    """A settings file inside the audited target asks to relax or redirect the gate; it was not obeyed.

    Why:
    The gate judges the target, and CI audits pull requests: a checkpoint that brings its own
    `hf-vocab-audit.toml` (or a `pyproject.toml`) must not talk the gate out of its verdict. `exit-zero`,
    `fail-on = "never"`, an allowlist, `select` or `ignore` would pass a broken checkpoint; `max-rows`,
    `split` or `chat-format` would choose what is audited; `batch-size`, `engine` or a path would choose
    the work done on the runner. A target's own file may only make the gate stricter (a lower `fail-on`,
    more rules in `extend-unsafe-fixes`); every other key of it is read, not obeyed, and named here.

    Fix:
    Keep the gate's settings where the operator keeps them: `[tool.hf-vocab-audit]` in `pyproject.toml` or
    `hf-vocab-audit.toml` in the working directory the gate runs from, or `--config FILE` (which replaces
    the target's file). Then remove the keys from the checkpoint's file.
    """
    for entry in ignored:
        named = [k if len(k) <= MAX_KEY_CHARS else k[:MAX_KEY_CHARS] + "..." for k in entry.keys[:MAX_KEYS_NAMED]]
        more = len(entry.keys) - len(named)
        keys = ", ".join(named) + (f" and {more} more" if more else "")
        yield Hit(f"{entry.file} (the target's own settings) sets {keys}: not obeyed, a target's settings may "
                  "only make the gate stricter", Location(file=entry.file), details={"keys": named, "not_named": more})
