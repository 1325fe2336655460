"""The ids a ``tokenizers`` backend holds, the values of ``get_vocab(with_added_tokens=True)``, without
building that dictionary, and off the critical path. On a 128k-token vocabulary ``get_vocab`` turns every
token into a Python string (about 0.1 s, a fifth of parsing tokenizer.json); the static gate only needs
the ids.

The proof uses the library's own lookups, in Rust: the model holds ``get_vocab_size(False)`` = M token
strings; ``decode`` keeps the ids it can find a token for. Decoding 0..M-1 once with no decoder (tokens
joined by single spaces) and once with ``Fuse`` (tokens concatenated) differs in length by the number of
tokens found minus one. When every id below M has a token, no more than M distinct ids exist and the model
holds exactly 0..M-1, one token each. ``get_vocab(True)`` then lays the added tokens over the model's
(content -> id): a model token whose content an added token takes at another id loses its id, and each
added id is present. Anything that does not fit (a hole, an added content at two ids, a backend that is
not a ``tokenizers.Tokenizer``) falls back to ``get_vocab``.

The two decodes run on two more threads (``decode_batch`` releases the GIL), through tokenizers of their
own that share the backend's model (``Tokenizer(model)`` holds the same vocabulary, nothing copied), so
the backend itself is never changed and the audit goes on (the added tokens, the headers, the rules)
while they run. :class:`VocabIds` joins them the first time the ids are read.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, overload


class VocabIds(Sequence[int]):
    """The sorted ids of a vocabulary: given, or computed by ``resolve`` on first use (then kept).

    A tuple to every reader (index, slice, length, iteration, equality); it pickles as the tuple.
    ``proved``: after resolving, whether the decodes proved the ids (False: ``get_vocab`` listed them)."""

    __slots__ = ("_ids", "_resolve", "proved")

    def __init__(self, ids: Sequence[int] | None = None, *, resolve: Callable[[], tuple[int, ...]] | None = None):
        if (ids is None) == (resolve is None):
            raise TypeError("VocabIds takes the ids or a function that computes them, not both")
        self._ids: tuple[int, ...] | None = tuple(ids) if ids is not None else None
        self._resolve = resolve
        self.proved: bool | None = None

    def resolved(self) -> tuple[int, ...]:
        if self._ids is None:
            assert self._resolve is not None
            self._ids, self._resolve = self._resolve(), None
        return self._ids

    @overload
    def __getitem__(self, index: int) -> int: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[int, ...]: ...
    def __getitem__(self, index: int | slice) -> int | tuple[int, ...]:
        return self.resolved()[index]

    def __len__(self) -> int:
        return len(self.resolved())

    def __iter__(self) -> Iterator[int]:
        return iter(self.resolved())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, VocabIds):
            return self.resolved() == other.resolved()
        return self.resolved() == other if isinstance(other, tuple) else NotImplemented

    def __hash__(self) -> int:
        return hash(self.resolved())

    def __repr__(self) -> str:
        return f"VocabIds({len(self)} ids)" if self._ids is not None else "VocabIds(pending)"

    def __reduce__(self) -> tuple[Any, ...]:
        return (VocabIds, (self.resolved(),))


def contiguous_vocab_ids(backend: Any) -> VocabIds | None:
    """The sorted ids of ``backend.get_vocab(with_added_tokens=True)``, proved on two more threads and joined
    on first use (where the proof fails, ``get_vocab`` answers then: ``proved`` says which); None for a backend
    that is not a ``tokenizers.Tokenizer`` (the caller asks ``get_vocab`` itself).

    The decodes read the model alone, which adding tokens does not change, so they may start as soon as the
    backend is parsed; the added tokens are read when the ids are first asked for."""
    from tokenizers import Tokenizer, decoders

    if not isinstance(backend, Tokenizer):
        return None
    size = backend.get_vocab_size(with_added_tokens=False)
    model = backend.model
    lengths: dict[str, int | None] = {}
    workers = []
    for name, decoder in (("joined", None), ("glued", decoders.Fuse())):
        private = Tokenizer(model)  # the same model; no added tokens, a decoder of its own
        private.decoder = decoder
        worker = threading.Thread(target=_decoded_length, args=(private, size, name, lengths),
                                  name=f"vocab-ids-{name}", daemon=True)
        worker.start()
        workers.append(worker)

    def finish() -> tuple[int, ...]:
        for worker in workers:
            worker.join()
        joined, glued = lengths.get("joined"), lengths.get("glued")
        found = None if joined is None or glued is None else joined - glued + 1 if joined else 0
        ids = _ids_from_count(found, size, backend, model)
        pending.proved = ids is not None
        if ids is None:  # a hole in the model's ids (or ids past M): get_vocab lists them exactly
            ids = tuple(sorted(set(backend.get_vocab(with_added_tokens=True).values())))
        return ids

    pending = VocabIds(resolve=finish)
    return pending


def _decoded_length(private: Any, size: int, name: str, out: dict[str, int | None]) -> None:
    """The length of 0..size-1 decoded by ``private`` (``decode_batch`` releases the GIL), None on failure."""
    try:
        out[name] = len(private.decode_batch([list(range(size))], skip_special_tokens=False)[0])
    except BaseException:  # noqa: BLE001 - any failure: the exact path answers instead
        out[name] = None


def _ids_from_count(found: int | None, size: int, backend: Any, model: Any) -> tuple[int, ...] | None:
    """The ids when ``found`` (model tokens among 0..size-1) proves the model holds exactly 0..size-1, with
    the backend's added tokens laid over them as ``get_vocab(True)`` lays them; None when it does not."""
    if found != size:
        return None
    added = {i: t.content for i, t in backend.get_added_tokens_decoder().items()}
    if len(set(added.values())) != len(added):
        return None  # one content at two ids: which id get_vocab keeps is the library's map order
    lost = set()
    for token_id, content in added.items():
        base = model.token_to_id(content)
        if base is not None and base != token_id:
            lost.add(base)  # get_vocab's key `content` now maps to the added id
    lost.difference_update(added)
    if not lost:
        extra = sorted(i for i in added if i >= size)
        return tuple(range(size)) + tuple(extra)
    ids = set(range(size)) - lost
    ids.update(added)
    return tuple(sorted(ids))
