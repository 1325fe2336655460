"""A target against its speculative-decoding draft (``check TARGET --draft DRAFT``): what the two must share for
the draft's proposals to mean the target's tokens.

- the vocabulary size both configs declare (transformers' assisted generation compares them);
- the token at each id of the range both tokenizers cover (a draft of another tokenizer proposes ids that name
  other tokens: nearly nothing is accepted);
- the bos/eos/pad ids;
- an EAGLE-3 draft (``draft_vocab_size`` in its config, ``d2t``/``t2d`` tensors): ``d2t`` maps draft id ``i``
  to target id ``i + d2t[i]``, which must be a row of the target's vocabulary; ``t2d`` has one entry per
  target id. The two small tensors are read from their safetensors byte ranges, bounded; nothing else is.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..io.int_vector import read_int_vector
from ..io.safetensors_header import TensorInfo
from .checkpoint import Facts
from .pairs import declared

MAX_COMPARED = 1_000_000  # ids compared token by token (every real vocabulary)
MAX_MAP = 4_000_000  # d2t entries read (EAGLE-3 drafts have 32k)
SHOW = 10


@dataclass(frozen=True)
class Renamed:
    """An id whose token differs: ``target`` and ``draft`` are the two tokenizers' strings there."""

    id: int
    target: str
    draft: str


@dataclass(frozen=True)
class SpecialDiff:
    file: str
    key: str
    role: str
    target: tuple[int, ...]
    draft: tuple[int, ...] | None


@dataclass(frozen=True)
class EagleMap:
    """An EAGLE-3 draft's vocabulary maps: what its config and tensors say, and what is out of step."""

    draft_vocab_size: int | None
    d2t: str | None  # the tensor's name
    d2t_len: int | None
    t2d: str | None
    t2d_len: int | None
    file: str | None  # the draft's safetensors file holding d2t
    past_target: tuple[tuple[int, int], ...] = ()  # (draft id i, i + d2t[i]) outside the target's rows
    past_count: int = 0
    unread: str | None = None  # why d2t's values were not read


@dataclass(frozen=True)
class DraftFacts:
    target: Facts
    draft: Facts
    draft_ref: str
    target_vocab: int | None  # config vocab_size
    draft_vocab: int | None
    target_rows: int | None  # the target's output rows (its lm_head, else its input embedding)
    shared: int = 0  # ids compared token by token
    renamed: tuple[Renamed, ...] = ()
    renamed_count: int = 0
    specials: tuple[SpecialDiff, ...] = ()
    eagle: EagleMap | None = None


def _rows(facts: Facts) -> int | None:
    """The rows the target scores: its output projection (the input matrix when tied), else its input
    embedding, else ``config.vocab_size``."""
    emb = facts.embeddings
    rows = None if emb is None else emb.output_rows if emb.output_rows is not None else emb.input_rows
    return rows if rows is not None else facts.config.vocab_size


def _tensor(facts: Facts, name: str) -> TensorInfo | None:
    tensors = facts.tensors
    if tensors is None:
        return None
    hit = tensors.get(name)
    if hit is not None:
        return hit
    return next((t for n, t in tensors.tensors.items() if n.endswith("." + name)), None)


def _length(info: TensorInfo | None) -> int | None:
    return info.shape[0] if info is not None and len(info.shape) == 1 else None


def _eagle(target_rows: int | None, draft: Facts) -> EagleMap | None:
    text = draft.config.text
    size = text.get("draft_vocab_size")
    d2t, t2d = _tensor(draft, "d2t"), _tensor(draft, "t2d")
    if size is None and d2t is None and t2d is None:
        return None
    size = size if isinstance(size, int) and not isinstance(size, bool) else None
    past: list[tuple[int, int]] = []
    count = 0
    unread = None
    if d2t is not None and target_rows is not None:
        values, unread = read_int_vector(draft.model_dir, d2t, MAX_MAP)
        if values is not None:
            for i, offset in enumerate(values):
                j = i + offset
                if not 0 <= j < target_rows:
                    count += 1
                    if len(past) < SHOW:
                        past.append((i, j))
    return EagleMap(size, d2t.name if d2t else None, _length(d2t), t2d.name if t2d else None, _length(t2d),
                    d2t.file if d2t else None, tuple(past), count, unread)


def compare_draft(target: Facts, draft: Facts, draft_ref: str) -> DraftFacts:
    rows = _rows(target)
    renamed: list[Renamed] = []
    count = shared = 0
    tt, dt = target.tokenizer, draft.tokenizer
    if tt is not None and dt is not None:
        shared = min(tt.max_id, dt.max_id, MAX_COMPARED - 1) + 1
        for i in range(shared):
            a, b = tt.id_to_token(i), dt.id_to_token(i)
            if a is None or b is None or a == b:
                continue
            count += 1
            if len(renamed) < SHOW:
                renamed.append(Renamed(i, a, b))
    ours = {(file, key): ids for file, key, _role, ids, _null in declared(target)}
    specials = []
    for file, key, role, ids, _null in declared(draft):
        mine = ours.get((file, key))
        if mine is not None and ids is not None and mine != ids:
            specials.append(SpecialDiff(file, key, role, mine, ids))
    return DraftFacts(target, draft, draft_ref, target.config.vocab_size, draft.config.vocab_size, rows, shared,
                      tuple(renamed), count, tuple(specials), _eagle(rows, draft))


__all__ = ["DraftFacts", "EagleMap", "Renamed", "SpecialDiff", "compare_draft"]
