"""The other artifact of a pair (``--base BASE`` beside a full checkpoint): gathered like the target, from its
JSON files and tensor headers only, never its code: a local folder, or a Hub id read through the Hub source's
checkout (small files and remote headers; no weight rows).

It is untrusted like the target: a missing or unreadable artifact is one line naming the flag and the path
(exit 2), and it never chooses what is audited or relaxes the gate.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ...errors import AuditError
from ..checkpoint import Facts
from .adapter import is_adapter
from .folder import gather


@dataclass(frozen=True)
class Paired:
    """The other artifact's facts, what it was called (``ref``) and whether its weight rows can be read here
    (a local folder: yes; a Hub id: headers only)."""

    facts: Facts
    ref: str
    local: bool


def gather_paired(ref: str | Path, flag: str, hub_timeout: int | None = None) -> Paired:
    """The facts of the artifact named by ``flag`` (``--base``): a local checkpoint folder or a Hub id."""
    text = str(ref)
    folder = Path(text)
    if folder.is_dir():
        if is_adapter(folder):
            raise AuditError(folder, f"{flag} is a PEFT adapter folder: pass the full checkpoint it pairs with")
        try:
            return Paired(gather(folder), text, True)
        except AuditError as exc:
            raise AuditError(None, f"{flag} {text}: {exc}") from None
    from .hub import checkout, parse_hub_ref

    hub = parse_hub_ref(text) if not folder.exists() and not text.startswith((".", "/", "~")) else None
    if hub is None:
        raise AuditError(folder, f"{flag}: not a checkpoint folder or a Hub id")
    try:
        with checkout(hub, hub_timeout) as co:
            facts = gather(co.folder, tensors_from=lambda _folder: co.tensors)
    except AuditError as exc:
        raise AuditError(None, f"{flag} {text}: {exc}") from None
    return Paired(facts, text, False)


__all__ = ["Paired", "gather_paired"]
