"""HVA85x: a target against its speculative-decoding draft (``check TARGET --draft DRAFT``).

Findings are placed in the target's files (the report's target); their details name the draft and its file.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..core.findings import Location, Severity
from .registry import Hit, Scope, rule

if TYPE_CHECKING:  # read only with --draft: a plain check never imports the comparison
    from ..facts.drafts import DraftFacts


@rule("HVA850", "draft-vocab-size-differs", Severity.WARNING, scope=Scope.DRAFT)
def draft_vocab_size_differs(pair: DraftFacts) -> Iterator[Hit]:
    """The draft's config declares another `vocab_size` than the target's.

    Why:
    transformers' assisted generation compares the two `vocab_size`s: when they differ,
    `model.generate(assistant_model=draft)` raises "The main and assistant models have different tokenizers"
    (measured with transformers 5 on CPU) and only runs as universal assisted decoding, with both tokenizers
    passed, re-tokenizing the text at every step. Serving engines refuse or mis-map such a pair. Same-family
    pairs can differ by padding alone (a 7B padded to 152064 rows, a 0.5B to 151936).

    Fix:
    Pair the target with a draft of the same vocabulary (same family and tokenizer); if only the padding
    differs, pass `tokenizer=` and `assistant_tokenizer=` to `generate()`, or pad the draft's matrices.
    """
    if pair.target_vocab is None or pair.draft_vocab is None or pair.target_vocab == pair.draft_vocab:
        return
    yield Hit(f"config.json vocab_size is {pair.target_vocab}; the draft's is {pair.draft_vocab}",
              Location(file="config.json", key=pair.target.config.text_prefix + "vocab_size"),
              details={"vocab_size": pair.target_vocab, "draft_vocab_size": pair.draft_vocab,
                       "draft": pair.draft_ref, "draft_file": "config.json"})


@rule("HVA851", "draft-token-mismatch", Severity.WARNING, scope=Scope.DRAFT)
def draft_token_mismatch(pair: DraftFacts) -> Iterator[Hit]:
    """The draft's tokenizer has another token than the target's at the same id.

    Why:
    Speculative decoding passes ids, not text: the target verifies the draft's proposed ids as its own tokens.
    An id that names another token in the draft means its proposals are guesses in another vocabulary: the
    target rejects nearly all of them, every step pays for the draft and the verification, and decoding is
    slower than without a draft. With the same `vocab_size` transformers accepts the pair without a word.

    Fix:
    Use a draft trained with the target's tokenizer (the same family, the same added tokens at the same ids).
    """
    if not pair.renamed:
        return
    first = pair.renamed[0]
    shown = ", ".join(f"{r.id}: {r.target!r} vs {r.draft!r}" for r in pair.renamed)
    more = f" and {pair.renamed_count - len(pair.renamed)} more" if pair.renamed_count > len(pair.renamed) else ""
    tfile = "tokenizer.json"
    yield Hit(f"{pair.renamed_count} of {pair.shared} shared id(s) name another token in the draft's tokenizer: "
              f"{shown}{more}",
              Location(file=tfile, token=first.target, token_id=first.id),
              details={"count": pair.renamed_count, "compared": pair.shared, "draft": pair.draft_ref,
                       "draft_file": tfile,
                       "tokens": [{"id": r.id, "target": r.target, "draft": r.draft} for r in pair.renamed]})


@rule("HVA852", "draft-special-id-differs", Severity.WARNING, scope=Scope.DRAFT)
def draft_special_id_differs(pair: DraftFacts) -> Iterator[Hit]:
    """A bos/eos/pad id of the draft differs from the target's in the same file.

    Why:
    The draft stops proposing at its own eos and pads with its own pad: an eos at another id makes it draft
    past the end of an answer (wasted proposals) or stop early, and a different bos starts its context with
    another token than the target's.

    Fix:
    Give the draft the target's special ids (`generation_config.json`, `config.json`, the tokenizer).
    """
    for d in pair.specials:
        now = "missing" if d.draft is None else _one(d.draft)
        yield Hit(f"{d.file} {d.key}: the target has {_one(d.target)}, the draft {now}",
                  Location(file=d.file, key=d.key),
                  details={"role": d.role, "ids": list(d.target), "draft_ids": list(d.draft) if d.draft else None,
                           "draft": pair.draft_ref, "draft_file": d.file})


def _one(ids: tuple[int, ...]) -> str:
    return str(ids[0]) if len(ids) == 1 else str(list(ids))


@rule("HVA853", "draft-eagle-map-out-of-range", Severity.ERROR, scope=Scope.DRAFT)
def draft_eagle_map_out_of_range(pair: DraftFacts) -> Iterator[Hit]:
    """An EAGLE-3 draft's `d2t` maps a draft id past the target's vocabulary: `i + d2t[i]` is not a target row.

    Why:
    Engines turn a draft token into the target's with `i + d2t[i]` and index the target's logits and
    embeddings with it: an id past the target's rows is an out-of-range index (`IndexError` on CPU,
    "device-side assert triggered" on a GPU) the first time the draft proposes it.

    Fix:
    Rebuild `d2t` from the target's tokenizer (the draft was trained for another target), or pair the draft
    with the target it was trained for.
    """
    eagle = pair.eagle
    if eagle is None or not eagle.past_count:
        return
    shown = ", ".join(f"{i} -> {j}" for i, j in eagle.past_target)
    yield Hit(f"the draft's {eagle.d2t} ({eagle.file}) maps {eagle.past_count} draft id(s) past the target's "
              f"{pair.target_rows} rows: {shown}",
              Location(file="config.json", key="vocab_size", token_id=eagle.past_target[0][1]),
              details={"count": eagle.past_count, "target_rows": pair.target_rows, "draft": pair.draft_ref,
                       "draft_file": eagle.file, "draft_tensor": eagle.d2t,
                       "maps": [[i, j] for i, j in eagle.past_target]})


@rule("HVA854", "draft-eagle-map-length", Severity.ERROR, scope=Scope.DRAFT)
def draft_eagle_map_length(pair: DraftFacts) -> Iterator[Hit]:
    """An EAGLE-3 draft's maps have other lengths than its config and the target say: `d2t` one entry per draft
    id (`draft_vocab_size`), `t2d` one per target id.

    Why:
    Engines allocate `d2t` with `draft_vocab_size` entries and `t2d` with the target's vocabulary and load
    the tensors into them: another length fails the load ("size mismatch"), or, where the buffer is
    replaced, leaves draft ids without a target token.

    Fix:
    Regenerate the maps for this target, or set `draft_vocab_size` to the draft's `d2t` length.
    """
    eagle = pair.eagle
    if eagle is None:
        return
    if eagle.d2t is None and eagle.draft_vocab_size is not None:
        yield Hit(f"the draft declares draft_vocab_size {eagle.draft_vocab_size} but has no d2t tensor",
                  Location(file="config.json", key="vocab_size"),
                  details={"draft": pair.draft_ref, "draft_file": "config.json",
                           "draft_vocab_size": eagle.draft_vocab_size})
    if eagle.d2t_len is not None and eagle.draft_vocab_size is not None and eagle.d2t_len != eagle.draft_vocab_size:
        yield Hit(f"the draft's {eagle.d2t} has {eagle.d2t_len} entries; its draft_vocab_size is "
                  f"{eagle.draft_vocab_size}", Location(file="config.json", key="vocab_size"),
                  details={"draft": pair.draft_ref, "draft_file": eagle.file, "draft_tensor": eagle.d2t,
                           "entries": eagle.d2t_len, "draft_vocab_size": eagle.draft_vocab_size})
    if eagle.t2d_len is not None and pair.target_rows is not None and eagle.t2d_len != pair.target_rows:
        yield Hit(f"the draft's {eagle.t2d} has {eagle.t2d_len} entries; the target has {pair.target_rows} rows",
                  Location(file="config.json", key="vocab_size"),
                  details={"draft": pair.draft_ref, "draft_file": eagle.file, "draft_tensor": eagle.t2d,
                           "entries": eagle.t2d_len, "target_rows": pair.target_rows})
    if eagle.unread is not None:
        yield Hit(f"the draft's d2t could not be checked: {eagle.unread}", Location(file="config.json"),
                  details={"draft": pair.draft_ref, "draft_file": eagle.file, "why": eagle.unread})


@rule("HVA855", "draft-refused-by-engine", Severity.WARNING, scope=Scope.DRAFT)
def draft_refused_by_engine(pair: DraftFacts) -> Iterator[Hit]:
    """A serving engine's own vocabulary check refuses this draft for this target (one finding per engine).

    Why:
    llama.cpp (as vendored by llama-cpp-python 0.3.36, `common_speculative_are_compatible` in
    `common/speculative.cpp`) compares the two vocabularies before it speculates with a plain draft (not an
    EAGLE-3 one, which HVA853/854 check): whether both add a bos/eos
    token and the same one, sizes no more than 128 apart (`SPEC_VOCAB_MAX_SIZE_DIFFERENCE`), and the token text
    at every id from 5 (`SPEC_VOCAB_CHECK_START_TOKEN_ID`) up to the smaller size. The first difference stops it:
    "the target and draft vocabs are not compatible" and a `std::runtime_error`, no fallback, so the server does
    not start. vLLM 0.10.2 and SGLang 0.4.10 compare nothing: they run the draft on the target's tokenizer
    (and embedding) and a draft of another vocabulary is silently rejected token by token (HVA851).

    Fix:
    Pair the target with a draft of its own tokenizer (same family, same added tokens, the same bos/eos
    handling in `tokenizer.json`'s post-processor, sizes within 128 of each other).
    """
    from ..facts.draft_engines import refusals

    for r in refusals(pair):
        engine, rule_ = r.engine, r.engine.draft_vocab
        assert rule_ is not None
        tfile = pair.target.gguf.file if pair.target.gguf is not None else (
            "config.json" if r.key is not None else "tokenizer.json")
        key = pair.target.config.text_prefix + r.key if r.key is not None else None
        yield Hit(f"{engine.name} ({engine.version}) refuses this draft: \"{r.said}\", then {rule_.refusal}",
                  Location(file=tfile, key=key, token=r.token, token_id=r.token_id),
                  details={"engine": engine.name, "version": engine.version, "check": r.check.name.lower(),
                           "said": r.said, "refusal": rule_.refusal, "source": rule_.source,
                           "draft": pair.draft_ref, "draft_file": r.draft_file})
