"""The ids a ``tokenizers`` backend holds, the values of ``get_vocab(with_added_tokens=True)``, without
building that dictionary. On a 128k-token vocabulary ``get_vocab`` turns every token into a Python string
(about 0.1 s, a fifth of parsing tokenizer.json); the static gate only needs the ids.

The proof uses the library's own lookups, in Rust: the model holds ``get_vocab_size(False)`` = M token
strings; ``decode`` keeps the ids it can find a token for. Decoding 0..M-1 once with no decoder (tokens
joined by single spaces) and once with ``Fuse`` (tokens concatenated) differs in length by the number of
tokens found minus one. When every id below M has a token, no more than M distinct ids exist and the model
holds exactly 0..M-1, one token each. ``get_vocab(True)`` then lays the added tokens over the model's
(content -> id): a model token whose content an added token takes at another id loses its id, and each
added id is present. Anything that does not fit (a hole, an added content at two ids, a backend that is
not a ``tokenizers.Tokenizer``) returns None and the caller takes ``get_vocab`` as before.

The decoder is swapped for the two calls and put back: use it only on a backend the audit loaded itself.
"""

from __future__ import annotations

from typing import Any


def contiguous_vocab_ids(backend: Any) -> tuple[int, ...] | None:
    """The sorted ids of ``backend.get_vocab(with_added_tokens=True)``, or None where the fast proof does
    not apply (the caller then asks ``get_vocab``)."""
    from tokenizers import Tokenizer, decoders

    if not isinstance(backend, Tokenizer):
        return None
    size = backend.get_vocab_size(with_added_tokens=False)
    added = {i: t.content for i, t in backend.get_added_tokens_decoder().items()}
    if len(set(added.values())) != len(added):
        return None  # one content at two ids: which id get_vocab keeps is the library's map order
    if size == 0:
        return tuple(sorted(added))
    model = backend.model
    # Ids below M that decode finds through the added vocabulary only, not the model.
    added_only = sum(1 for i in added if i < size and model.id_to_token(i) is None)
    everything = list(range(size))
    saved = backend.decoder
    try:
        backend.decoder = None
        spaced = backend.decode(everything, skip_special_tokens=False)
        backend.decoder = decoders.Fuse()
        fused = backend.decode(everything, skip_special_tokens=False)
    finally:
        backend.decoder = saved
    found = len(spaced) - len(fused) + 1 if spaced else 0
    if found - added_only != size:
        return None  # a hole in the model's ids (or ids past M): the slow path lists them exactly
    lost = set()
    for token_id, content in added.items():
        base = model.token_to_id(content)
        if base is not None and base != token_id:
            lost.add(base)  # get_vocab's key `content` now maps to the added id
    lost.difference_update(added)
    ids = set(range(size)) - lost if lost else None
    if ids is None:
        extra = sorted(i for i in added if i >= size)
        return tuple(range(size)) + tuple(extra)
    ids.update(added)
    return tuple(sorted(ids))
