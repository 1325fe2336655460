"""Control strings of a chat template: what the model must see as single tokens."""

from __future__ import annotations

import re

# Control strings: ChatML/Llama-3/Phi style <|...|>, DeepSeek's full-width <｜...｜>, Gemma's turns.
# Bracket tags such as [INST] or <tools> are left alone: many tokenizers split them by design.
CONTROL_RE = re.compile(r"<\|[^<>|\s'\"]{1,64}\|>|<｜[^<>｜\s'\"]{1,64}｜>|</?(?:start|end)_of_turn>")


def control_strings(template: str) -> list[str]:
    """The distinct control strings in ``template``, sorted."""
    return sorted(set(CONTROL_RE.findall(template)))
