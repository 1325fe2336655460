"""Facts: what a checkpoint says about itself, gathered cheaply (headers and JSON, no weights).

One :class:`Facts` type (:mod:`.checkpoint`); where facts come from is :mod:`.sources` (a local folder,
a Hub commit, the live model and tokenizer objects of a running script, a PEFT adapter against its base, a
GGUF file: one ``FactsSource`` each, chosen by :mod:`.sources.registry`); the tokenizer's files are
:mod:`.tokenizer`. Derived facts live beside them: usable positions, chat-template control strings,
vocabulary geometry, rule requirements.
"""

from __future__ import annotations

from .checkpoint import Facts
from .sources.folder import gather
from .sources.memory import facts_from_memory

__all__ = ["Facts", "facts_from_memory", "gather"]
