"""The ids a ``tokenizers`` backend holds, the values of ``get_vocab(with_added_tokens=True)``, without
building that dictionary, and off the critical path. On a 128k-token vocabulary ``get_vocab`` turns every
token into a Python string (about 0.1 s, a fifth of parsing tokenizer.json); the static gate only needs
the ids.

The proof uses the library's own lookups, in Rust: the model holds ``get_vocab_size(False)`` = M token
strings, and ``decode`` keeps the ids it can find a token for. 0..M-1 are decoded through a decoder of our
own: ``CTC`` with a space as its pad token removes the spaces inside each token (and drops a token left
empty), then ``WordPiece`` with a prefix no real token starts with puts one space before every token but
the first. The output then holds at most (tokens found - 1) spaces, exactly that many when every token
survived; so spaces + 1 = M proves that every id below M has a token, that no more than M distinct ids
exist, and that the model holds exactly 0..M-1. Anything unusual (a hole, a token of spaces only, a token
starting with the prefix) only lowers the count, and then ``get_vocab`` answers. ``get_vocab(True)`` lays
the added tokens over the model's (content -> id): a model token whose content an added token takes at
another id loses its id, and each added id is present; an added content at two ids also falls back.
One case differs from ``get_vocab`` on purpose: a Unigram model whose list repeats a piece keeps every
position here, as ``id_to_token`` and ``len(tokenizer)`` count them (the rows a model is sized by), where
``get_vocab``'s piece -> id map keeps the piece's last position only and so shows a hole that is not one.

The decode runs on a second thread (``decode_batch`` releases the GIL, and splits the two halves of the
range over the library's own threads), through a tokenizer of its own that shares the backend's model
(``Tokenizer(model)`` holds the same vocabulary, nothing copied), so the backend itself is never changed
and the audit goes on (the added tokens, the headers, the rules) meanwhile. :class:`VocabIds` joins it the
first time the ids are read.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, overload


class VocabIds(Sequence[int]):
    """The sorted ids of a vocabulary: given, or computed by ``resolve`` on first use (then kept).

    A tuple to every reader (index, slice, length, iteration, equality); it pickles as the tuple.
    ``proved``: after resolving, whether the decodes proved the ids (False: ``get_vocab`` listed them)."""

    __slots__ = ("_ids", "_lock", "_resolve", "proved")

    def __init__(self, ids: Sequence[int] | None = None, *, resolve: Callable[[], tuple[int, ...]] | None = None):
        if (ids is None) == (resolve is None):
            raise TypeError("VocabIds takes the ids or a function that computes them, not both")
        self._ids: tuple[int, ...] | None = tuple(ids) if ids is not None else None
        self._resolve = resolve
        self._lock = threading.Lock()
        self.proved: bool | None = None

    def resolved(self) -> tuple[int, ...]:
        ids = self._ids
        if ids is None:
            with self._lock:  # two readers at once: one computes, the other waits for it
                if self._ids is None:
                    assert self._resolve is not None
                    self._ids, self._resolve = self._resolve(), None
                ids = self._ids
        return ids

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


# A prefix no real token starts with: WordPiece leaves such a token without its space (the count drops).
_NO_TOKEN_STARTS_WITH = "\U0010ffff\U0010fffe\U0010ffff"


def contiguous_vocab_ids(backend: Any) -> VocabIds | None:
    """The sorted ids of ``backend.get_vocab(with_added_tokens=True)``, proved on a second thread and joined
    on first use (where the proof fails, ``get_vocab`` answers then: ``proved`` says which); None for a backend
    that is not a ``tokenizers.Tokenizer`` (the caller asks ``get_vocab`` itself).

    The decode reads the model alone, which adding tokens does not change, so it may start as soon as the
    backend is parsed; the added tokens are read when the ids are first asked for."""
    from tokenizers import Tokenizer, decoders

    if not isinstance(backend, Tokenizer):
        return None
    size = backend.get_vocab_size(with_added_tokens=False)
    model = backend.model
    private = Tokenizer(model)  # the same model; no added tokens, a decoder of its own
    private.decoder = decoders.Sequence([
        decoders.CTC(pad_token=" ", word_delimiter_token=_NO_TOKEN_STARTS_WITH, cleanup=False),
        decoders.WordPiece(prefix=_NO_TOKEN_STARTS_WITH, cleanup=False),
    ])
    found: list[int | None] = []
    worker = threading.Thread(target=_count_found, args=(private, size, found), name="vocab-ids", daemon=True)
    worker.start()

    def finish() -> tuple[int, ...]:
        worker.join()
        ids = _ids_from_count(found[0] if found else None, size, backend, model)
        pending.proved = ids is not None
        if ids is None:  # a hole in the model's ids (or ids past M): get_vocab lists them exactly
            ids = tuple(sorted(set(backend.get_vocab(with_added_tokens=True).values())))
        return ids

    pending = VocabIds(resolve=finish)
    return pending


def _count_found(private: Any, size: int, out: list[int | None]) -> None:
    """How many of 0..size-1 ``private`` decodes to a token (a lower bound, exact when every token kept its
    space): the two halves in one ``decode_batch``, which releases the GIL; None on any failure."""
    try:
        halves = [list(range(size // 2)), list(range(size // 2, size))]
        texts = private.decode_batch(halves, skip_special_tokens=False)
        out.append(sum(text.count(" ") + 1 for text in texts if text))
    except BaseException:  # noqa: BLE001 - any failure: the exact path answers instead
        out.append(None)


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
