"""What a settings file inside the audited target asked for and the gate did not obey (rule HVA003).

The target is untrusted (CI audits pull requests): its own ``hf-vocab-audit.toml`` (or a ``pyproject.toml``
inside it) may only make the gate stricter (``core.options.Option.stricter``). The gate reads the rest,
obeys none of it, and reports the keys here so the report says what was asked.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class IgnoredSettings:
    """One settings file inside the target and the keys of it the gate did not obey, in file order."""

    file: str  # as the report names files: relative to the target folder
    keys: tuple[str, ...]
