"""A full fine-tuned checkpoint against the checkpoint it was fine-tuned from (``check FT --base BASE``): what
the fine-tune lost or changed that it should have kept, from both sides' JSON files and tensor headers.

- rows: a vocabulary matrix with fewer rows than the base's (``resize_token_embeddings(len(tokenizer))`` on a
  padded model such as Gemma-3 or OLMo-2 cuts the padding rows, and any trained row past the tokenizer);
- special ids: a bos/eos/pad id the base declares (config, generation_config, tokenizer) that the fine-tune
  nulled (the Trainer writing ``"bos_token_id": null``) or changed;
- the chat template: lost or changed.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from dataclasses import dataclass

from .checkpoint import Facts
from .embeddings import EmbeddingFacts

ROLES = ("bos", "eos", "pad")


class Template(enum.Enum):
    """The fine-tune's chat template against the base's."""

    SAME = "same"
    LOST = "lost"
    CHANGED = "changed"
    ADDED = "added"
    NONE = "none"  # neither has one


@dataclass(frozen=True)
class Shrunk:
    """A vocabulary matrix of the fine-tune with fewer rows than the base's same matrix."""

    role: str  # "input" or "output"
    tensor: str  # the fine-tune's tensor
    base_tensor: str
    rows: int
    base_rows: int
    base_tokens: int | None = None  # len(base tokenizer): rows at or past it are padding no token maps to

    @property
    def tokens_cut(self) -> bool:
        """Rows of the base's tokens were cut (or the base has no tokenizer to tell), not padding only."""
        return self.base_tokens is None or self.rows < self.base_tokens


@dataclass(frozen=True)
class SpecialChange:
    """A special id the base declares in ``file`` under ``key``; ``now`` is the fine-tune's (None: nulled or
    absent; ``null`` says which)."""

    file: str
    key: str
    role: str
    base: tuple[int, ...]
    now: tuple[int, ...] | None
    null: bool  # the fine-tune's file has the key, set to null


@dataclass(frozen=True)
class BaseFacts:
    """What differs between a fine-tune (``target``) and its base; ``base_ref`` is the base as given."""

    target: Facts
    base: Facts
    base_ref: str
    shrunk: tuple[Shrunk, ...] = ()
    specials: tuple[SpecialChange, ...] = ()
    template: Template = Template.SAME
    template_file: str | None = None  # the fine-tune's template file (LOST: the base's)


def _matrices(emb: EmbeddingFacts | None) -> dict[str, tuple[str, int]]:
    out: dict[str, tuple[str, int]] = {}
    if emb is None:
        return out
    if emb.input is not None and emb.input.shape:
        out["input"] = (emb.input.name, emb.input.shape[0])
    if emb.output is not None and emb.output.shape:
        out["output"] = (emb.output.name, emb.output.shape[0])
    return out


def _tokenizer_file(facts: Facts) -> str:
    tok = facts.tokenizer
    return "tokenizer_config.json" if tok is None or tok.source == "tokenizers" else "tokenizer"


def declared(facts: Facts) -> Iterator[tuple[str, str, str, tuple[int, ...] | None, bool]]:
    """(file, key, role, ids, null) of every bos/eos/pad a checkpoint's files can declare: ids None where the
    key is absent or null (``null``: present and null)."""
    for file, part in (("config.json", facts.config), ("generation_config.json", facts.generation)):
        if part is None:
            continue
        text = facts.config.text if part is facts.config else part.raw
        for role in ROLES:
            key = f"{role}_token_id"
            ids = part.special.ids.get(key)
            name = part.special.keys.get(key, (facts.config.text_prefix if part is facts.config else "") + key)
            yield file, name, role, ids, ids is None and key in text and text[key] is None
    tok = facts.tokenizer
    if tok is not None:
        for role in ROLES:
            _content, token_id = tok.special_tokens.get(role, (None, None))
            yield _tokenizer_file(facts), f"{role}_token", role, (token_id,) if token_id is not None else None, False


def compare_base(target: Facts, base: Facts, base_ref: str) -> BaseFacts:
    ours, theirs = _matrices(target.embeddings), _matrices(base.embeddings)
    base_tokens = base.tokenizer.length if base.tokenizer is not None else None
    shrunk = tuple(Shrunk(role, ours[role][0], theirs[role][0], ours[role][1], theirs[role][1], base_tokens)
                   for role in ("input", "output") if role in ours and role in theirs
                   and ours[role][1] < theirs[role][1])
    now = {(file, key): (ids, null) for file, key, _role, ids, null in declared(target)}
    specials = []
    for file, key, role, ids, _null in declared(base):
        if ids is None:
            continue
        if (file, key) not in now:
            continue  # the fine-tune has no such file: HVA2xx report its own gaps
        got, null = now[(file, key)]
        if got != ids:
            specials.append(SpecialChange(file, key, role, ids, got, null))
    mine = target.tokenizer.chat_template if target.tokenizer is not None else None
    old = base.tokenizer.chat_template if base.tokenizer is not None else None
    if old is None:
        template = Template.NONE if mine is None else Template.ADDED
    elif mine is None:
        template = Template.LOST if target.tokenizer is not None else Template.SAME  # no tokenizer: HVA2xx say so
    else:
        template = Template.SAME if mine == old else Template.CHANGED
    where = target.tokenizer.chat_template_file if target.tokenizer is not None else None
    if template is Template.LOST and base.tokenizer is not None:
        where = base.tokenizer.chat_template_file
    return BaseFacts(target, base, base_ref, shrunk, tuple(specials), template, where)


__all__ = ["BaseFacts", "Shrunk", "SpecialChange", "Template", "compare_base", "declared"]
