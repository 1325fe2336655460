"""The facts sources, in the order they are asked: the first whose ``accepts`` says yes reads the target.

A new source is a :class:`~hf_vocab_audit.facts.sources.FactsSource` subclass and one line here.
"""

from __future__ import annotations

from . import FactsSource, SourceError
from .adapter_base import AdapterSource
from .folder import FolderSource
from .gguf import GGUFSource
from .hub import HubSource
from .memory import MemorySource

SOURCES: list[type[FactsSource]] = [
    MemorySource,
    GGUFSource,
    AdapterSource,
    HubSource,
    FolderSource,  # any other path: a missing folder is refused when it is gathered, naming the path
]


def resolve_source(target: object, *, remote: bool = True) -> FactsSource:
    """The source that reads ``target`` (``remote=False``: none that reaches the network, as ``audit()``)."""
    for cls in SOURCES:
        if not remote and getattr(cls, "remote", False):
            continue
        if cls.accepts(target):
            return cls(target)
    raise SourceError(None, f"no facts source reads {type(target).__name__} {target!r}"[:200])


__all__ = ["SOURCES", "resolve_source"]
