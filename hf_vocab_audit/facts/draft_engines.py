"""Which serving engines refuse a target with its speculative-decoding draft (``check TARGET --draft DRAFT``), by
each engine's own vocabulary check: the ``draft_vocab`` field of its entry in ``facts/consumers.py``, read in its
source at the version cited there (the engines do not run here).

llama.cpp compares the two GGUF files the checkpoints become, so its inputs are predicted as
``convert_hf_to_gguf.py`` writes them: the token count is ``config.json``'s ``vocab_size`` (the BPE and
SentencePiece paths pad the list with ``[PAD{i}]``; a GGUF target gives its own count); the token texts are the
tokenizer's strings, ``[PAD{i}]`` where one tokenizer has an id the other lacks; whether bos/eos is added is what
gguf-py reads in ``tokenizer.json``'s post-processor (a ``TemplateProcessing`` that starts or ends with a special
token, ``RobertaProcessing``, a ``ByteLevel`` alone adds neither). A tokenizer whose post-processor decides
nothing takes ``tokenizer_config.json``'s flag or llama.cpp's default for its vocabulary type, which are not
predicted: that comparison is then left out rather than guessed. llama.cpp's first check (the vocabulary type)
is not predicted either: two tokenizers of different types also differ in their token texts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .checkpoint import Facts
from .consumers import CONSUMERS, Consumer, DraftCheck, DraftVocabRule
from .drafts import DraftFacts
from .tokenizer import TokenizerFacts


@dataclass(frozen=True)
class Refusal:
    """An engine that refuses the pair: the check that failed, the engine's message, and where it points."""

    engine: Consumer
    check: DraftCheck
    said: str  # the engine's message, filled in
    key: str | None = None  # the target's config key (the size check)
    token: str | None = None  # the target's token at the id that differs
    token_id: int | None = None
    draft_file: str = "tokenizer.json"


@dataclass(frozen=True)
class Adds:
    """Whether a tokenizer adds a bos/eos token, and which (None: its post-processor does not decide it)."""

    bos: bool | None
    bos_id: int | None
    eos: bool | None
    eos_id: int | None


def draft_engines() -> tuple[Consumer, ...]:
    """The consumers whose check of a draft's vocabulary was read (their ``draft_vocab``)."""
    return tuple(c for c in CONSUMERS.values() if c.draft_vocab is not None)


def _post_processor(tok: TokenizerFacts) -> dict[str, Any]:
    processor = getattr(tok.backend, "post_processor", None)
    state = getattr(processor, "__getstate__", None)
    if state is None:
        return {}
    try:
        data = json.loads(state())
    except (TypeError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _special_id(processor: dict[str, Any], name: str) -> int | None:
    entry = processor.get("special_tokens", {}).get(name, {})
    ids = entry.get("ids") if isinstance(entry, dict) else None
    return ids[0] if isinstance(ids, list) and ids and isinstance(ids[0], int) else None


def adds(tok: TokenizerFacts) -> Adds:
    """gguf-py's reading of the post-processor (``SpecialVocab._try_load_from_tokenizer_json``), reduced to the
    common layouts: a later processor overrides an earlier one, ``ByteLevel`` only sets what nothing set."""
    found: dict[str, tuple[bool, int | None]] = {}
    bos = tok.special_tokens.get("bos", (None, None))
    cls = tok.special_tokens.get("cls", (None, None))
    eos = tok.special_tokens.get("eos", (None, None))
    data = _post_processor(tok)
    processors = data.get("processors", [data])
    for processor in processors if isinstance(processors, list) else []:
        kind = processor.get("type") if isinstance(processor, dict) else None
        if kind == "ByteLevel":
            found.setdefault("bos", (False, bos[1]))
            found.setdefault("eos", (False, eos[1]))
        elif kind == "RobertaProcessing":
            found["bos"], found["eos"] = (True, bos[1] if bos[1] is not None else cls[1]), (True, eos[1])
        elif kind == "TemplateProcessing":
            single = processor.get("single", [])
            if not isinstance(single, list) or len(single) < 2:
                continue
            first = single[0].get("SpecialToken", {}).get("id") if isinstance(single[0], dict) else None
            last = single[-1].get("SpecialToken", {}).get("id") if isinstance(single[-1], dict) else None
            if isinstance(first, str) and first:
                known = bos[0] is None or first in (bos[0], cls[0])
                found["bos"] = (known, _special_id(processor, first))
            if isinstance(last, str) and last:
                found["eos"] = (True, _special_id(processor, last))
    b, e = found.get("bos"), found.get("eos")
    return Adds(b[0] if b else None, b[1] if b else bos[1], e[0] if e else None, e[1] if e else eos[1])


def llama_tokens(facts: Facts) -> int | None:
    """The token count of the GGUF the artifact is or becomes."""
    if facts.gguf is not None:
        return facts.gguf.n_tokens
    if facts.config.vocab_size is not None:
        return facts.config.vocab_size
    return facts.tokenizer.max_id + 1 if facts.tokenizer is not None else None


def _text(tok: TokenizerFacts, i: int) -> str:
    text = tok.id_to_token(i)
    return f"[PAD{i}]" if text is None else text


def _first_differing(pair: DraftFacts, start: int, end: int) -> tuple[int, str, str] | None:
    """The first id in ``[start, end)`` whose token text differs between the two (as converted): a token that
    compare_draft found renamed, or an id one tokenizer holds and the other converts to ``[PAD{i}]``."""
    hits: list[tuple[int, str, str]] = [(r.id, r.target, r.draft) for r in pair.renamed if start <= r.id < end]
    tt, dt = pair.target.tokenizer, pair.draft.tokenizer
    if tt is not None and dt is not None and tt.max_id != dt.max_id:
        longer = tt if tt.max_id > dt.max_id else dt
        past = longer.ids_at_or_above(max(pair.shared, start))
        if past and past[0] < end:
            i = past[0]
            hits.append((i, _text(tt, i), _text(dt, i)))
    return min(hits) if hits else None


def _check(engine: Consumer, rule: DraftVocabRule, check: DraftCheck, message: str,
           pair: DraftFacts) -> Refusal | None:
    """``engine``'s ``check`` of the pair: None when it passes (or its inputs are not known)."""
    tt, dt = pair.target.tokenizer, pair.draft.tokenizer
    if check in (DraftCheck.ADD_BOS, DraftCheck.ADD_EOS):
        if tt is None or dt is None:
            return None
        at, ad = adds(tt), adds(dt)
        bos = check is DraftCheck.ADD_BOS
        add_t, add_d = (at.bos, ad.bos) if bos else (at.eos, ad.eos)
        id_t, id_d = (at.bos_id, ad.bos_id) if bos else (at.eos_id, ad.eos_id)
        if add_t is None or add_d is None or (add_t == add_d and (not add_t or id_t == id_d)):
            return None
        said = message.format(add_t=int(add_t), add_d=int(add_d), id_t=-1 if id_t is None else id_t,
                              id_d=-1 if id_d is None else id_d)
        return Refusal(engine, check, said, token_id=id_t)
    n_t, n_d = llama_tokens(pair.target), llama_tokens(pair.draft)
    if n_t is None or n_d is None:
        return None
    if check is DraftCheck.SIZE:
        diff = abs(n_t - n_d)
        if diff <= rule.max_size_difference:
            return None
        said = message.format(n_t=n_t, n_d=n_d, diff=diff, max=rule.max_size_difference)
        return Refusal(engine, check, said, key="vocab_size", draft_file="config.json")
    hit = _first_differing(pair, rule.compare_from, min(n_t, n_d))
    if hit is None:
        return None
    i, t, d = hit
    return Refusal(engine, check, message.format(id=i, t=t, d=d), token=t, token_id=i)


def refusals(pair: DraftFacts) -> tuple[Refusal, ...]:
    """One :class:`Refusal` per engine whose check fails: the first failing check, as the engine stops there."""
    found = []
    for engine in draft_engines():
        rule = engine.draft_vocab
        assert rule is not None
        if pair.eagle is not None and not rule.eagle3_checked:
            continue
        for check, message in rule.checks:
            hit = _check(engine, rule, check, message, pair)
            if hit is not None:
                found.append(hit)
                break
    return tuple(found)


__all__ = ["Adds", "Refusal", "adds", "draft_engines", "llama_tokens", "refusals"]
