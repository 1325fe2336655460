"""Which embedding rows fine-tuning can change, as far as the target's files say, and the untrained rows
that stay frozen (HVA580 reads them against the ids a dataset uses).

Only an adapter config says anything: without one the target is fully fine-tuned, and every row trains. A PEFT
adapter freezes the base: a row of the base's embedding or lm_head changes only when peft wraps its module,
matched as peft 0.21 matches it:

- ``modules_to_save``: ``_set_trainable`` wraps every module whose name ends with an entry (``key.endswith``);
- ``target_modules`` (LoRA on the matrix itself): the module's name is an entry or ends with ``.entry``
  (``check_target_module_exists``), or ``re.fullmatch``-es the one regular expression; an untrusted pattern
  is run only when it cannot backtrack for long (:func:`tame_pattern`), otherwise it trains nothing here;
- ``trainable_token_indices``: a plain list trains those ids of the input embeddings (and of an lm_head tied
  to them); a dict names its modules, matched by ``endswith`` as above.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .sources.adapter import AdapterFacts


@dataclass(frozen=True)
class FrozenSide:
    """One matrix's row of a token: untrained, and not trained by the adapter."""

    side: str  # "input" (the embedding) or "output" (an untied lm_head)
    tensor: str
    file: str  # relative to the base checkpoint's folder
    what: str  # "is all zero (norm 0, ...)": how the row was found untrained


@dataclass(frozen=True)
class FrozenRow:
    token_id: int
    token: str | None
    roles: tuple[str, ...]  # bos/eos/chat template/added/reserved..., as the weights analysis names them
    sides: tuple[FrozenSide, ...]


@dataclass(frozen=True)
class FrozenRows:
    """The untrained rows an adapter leaves frozen; the scan counts the ids the data uses among them."""

    rows: tuple[FrozenRow, ...]
    trains: str  # what the adapter does train, for the message ("modules_to_save none, ...")

    @property
    def ids(self) -> tuple[int, ...]:
        return tuple(r.token_id for r in self.rows)

    def by_id(self) -> dict[int, FrozenRow]:
        return {r.token_id: r for r in self.rows}


def module_of(tensor: str) -> str:
    """The module a weight belongs to, as ``named_modules`` names it (``model.embed_tokens``)."""
    return tensor.removesuffix(".weight")


MAX_PATTERN = 300  # characters of a target_modules pattern that is run at all
MAX_QUANTIFIERS = 3  # at most n**3 steps on a module name of n characters
MAX_MODULE = 128  # characters of a module name a pattern is run on
_QUANTIFIER = re.compile(r"[*+{]|(?<!\()\?")  # escaped ones too: counting more is only stricter
_UNTAMED = re.compile(r"\)[*+?{]|\\[1-9]|\(\?P=")  # a quantified group, a backreference


def tame_pattern(pattern: str) -> bool:
    """Whether ``re.fullmatch(pattern, name)`` is cheap on a short name: no quantified group (the
    exponential backtracking of ``(a+)+``), no backreference, and few quantifiers (each nests a loop)."""
    if len(pattern) > MAX_PATTERN or _UNTAMED.search(pattern) or len(_QUANTIFIER.findall(pattern)) > MAX_QUANTIFIERS:
        return False
    try:
        re.compile(pattern)
    except (re.error, RecursionError, OverflowError):
        return False
    return True


def _lora_targets(adapter: AdapterFacts, module: str) -> bool:
    pattern = adapter.target_pattern
    if pattern is not None:
        return len(module) <= MAX_MODULE and tame_pattern(pattern) and re.fullmatch(pattern, module) is not None
    return module in adapter.target_modules or any(module.endswith(f".{t}") for t in adapter.target_modules)


def trains_module(adapter: AdapterFacts, tensor: str) -> bool:
    """Whether the adapter trains every row of ``tensor``'s module (modules_to_save, or LoRA on it)."""
    module = module_of(tensor)
    return any(module.endswith(n) for n in adapter.modules_to_save if n) or _lora_targets(adapter, module)


def trained_tokens(adapter: AdapterFacts, tensor: str, input_side: bool) -> frozenset[int]:
    """The ids ``trainable_token_indices`` trains in ``tensor`` (the input side also stands for a tied lm_head)."""
    module = module_of(tensor)
    ids: set[int] = set()
    for name, indices in adapter.token_indices_by_module:
        if (input_side if name is None else bool(name) and module.endswith(name)):
            ids.update(indices)
    return frozenset(ids)


def adapter_trains(adapter: AdapterFacts) -> str:
    """What the adapter trains besides its factors, in the words of its config."""
    indices = len(adapter.trainable_token_indices)
    targets = (f"/{adapter.target_pattern[:80]}/" if adapter.target_pattern is not None
               else ", ".join(adapter.target_modules)[:200] or "none")
    return (f"modules_to_save {', '.join(adapter.modules_to_save)[:200] or 'none'}; target_modules {targets}; "
            f"trainable_token_indices {indices or 'none'}")
