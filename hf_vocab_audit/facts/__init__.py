"""Facts: what a checkpoint says about itself, gathered cheaply (headers and JSON, no weights).

One :class:`Facts` type (:mod:`.checkpoint`), one module per source: a local folder (:mod:`.folder`),
a Hub commit (:mod:`.hub`), the live model and tokenizer objects of a running script (:mod:`.memory`,
``facts_from_memory``). Derived facts live beside them: usable positions, chat-template control
strings, vocabulary geometry, rule requirements, line numbers of JSON keys.
"""

from __future__ import annotations

from .checkpoint import Facts
from .sources.folder import gather
from .sources.memory import facts_from_memory

__all__ = ["Facts", "facts_from_memory", "gather"]
