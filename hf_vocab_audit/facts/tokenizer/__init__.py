"""Tokenizer facts exactly as ``AutoTokenizer`` (transformers 5) presents them to users, and the one
derivation of those facts from a loaded backend that every source (folder, transformers fallback, live
objects) shares. Loading from a folder is :mod:`.folder`; its JSON files are read by :mod:`.config`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from ...errors import AuditError
from ..chat_template import control_strings
from .added_tokens import AddedTokenConflict, AddedTokenInfo
from .bounded_calls import library_call, unbounded_options_off
from .normalizer_growth import check_backend_growth

ROLES = ("bos", "eos", "unk", "sep", "pad", "cls", "mask")
VERY_LARGE = int(1e29)  # transformers' VERY_LARGE_INTEGER (1e30) means "no limit set"


@dataclass(frozen=True)
class TokenizerFacts:
    folder: Path
    source: str  # "tokenizers" (fast path) or "transformers" (slow-file fallback)
    files: tuple[str, ...]
    length: int  # len(tokenizer)
    ids: Sequence[int] = field(repr=False)  # every id in the vocabulary, sorted (a tuple, or VocabIds)
    added_tokens: tuple[AddedTokenInfo, ...]
    special_tokens: dict[str, tuple[str, int | None]]  # role -> (content, id)
    extra_special_tokens: tuple[tuple[str, int | None], ...]
    model_max_length: int | None  # None when unset
    chat_template: str | None
    chat_template_file: str | None
    tokenizer_class: str | None
    model_input_names: tuple[str, ...]
    pair_type_ids: tuple[int, ...]  # distinct token_type_ids a sentence pair produces
    conflicts: tuple[AddedTokenConflict, ...]
    auto_map: dict[str, Any] | None
    backend: Any = field(repr=False, compare=False, hash=False)  # tokenizers.Tokenizer

    @property
    def max_id(self) -> int:
        """The largest id the tokenizer can emit (-1 for an empty vocabulary)."""
        return self.ids[-1] if self.ids else -1

    @property
    def returns_token_type_ids(self) -> bool:
        return "token_type_ids" in self.model_input_names

    def id_to_token(self, token_id: int) -> str | None:
        """The token at ``token_id``; None for an id the vocabulary cannot hold. Ids come from files (a config's
        ``image_token_index`` of 2**40): the library takes a u32 and raises OverflowError past it."""
        if not 0 <= token_id <= self.max_id:
            return None
        return self.backend.id_to_token(token_id)

    def ids_at_or_above(self, limit: int) -> list[int]:
        """Sorted ids >= ``limit`` that the tokenizer can emit (vectorised over the id list)."""
        import bisect

        return list(self.ids[bisect.bisect_left(self.ids, limit) :])

    def encode(self, text: str) -> list[int]:
        """Ids of ``text`` without the special tokens a template would add."""
        return self.encode_many([text])[0]

    def encode_many(self, texts: list[str]) -> list[list[int]]:
        """Ids of each of ``texts`` (one library call; a failure is one line naming the tokenizer)."""
        out: list[list[int]] = []
        # encode_batch_fast: the same ids without character offsets, which nothing here reads.
        encode = getattr(self.backend, "encode_batch_fast", None) or self.backend.encode_batch
        with library_call(self.folder / (self.files[0] if self.files else ""), "the tokenizers library failed to encode"):
            for start in range(0, len(texts), 4096):  # chunks: an Encoding object per text costs ~1 KB
                out.extend(e.ids for e in encode(texts[start : start + 4096], add_special_tokens=False))
        return out

    @cached_property
    def template_markers(self) -> tuple[tuple[str, tuple[int, ...]], ...]:
        """Each distinct control string of the chat template with its ids, encoded once for every rule
        and analysis that asks (a hostile template holds hundreds of thousands)."""
        texts = control_strings(self.chat_template or "")
        return tuple(zip(texts, map(tuple, self.encode_many(texts)), strict=True))


def parse_max_length(path: Path, value: Any) -> int | None:
    """``model_max_length`` as a positive int, None when unset (transformers' 1e30 sentinel included)."""
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise AuditError(path, f'"model_max_length" must be a positive integer, not {value!r}'[:200])
    return None if value >= VERY_LARGE else value


def facts_of_backend(
    *,
    folder: Path,
    source: str,
    files: tuple[str, ...],
    backend: Any,
    named: dict[str, str],
    extra: list[str],
    model_max_length: int | None,
    template: str | None,
    template_file: str | None,
    tokenizer_class: str | None,
    names: tuple[str, ...],
    conflicts: tuple[AddedTokenConflict, ...],
    auto_map: dict[str, Any] | None,
    ids: Sequence[int] | None = None,
) -> TokenizerFacts:
    """The facts of a loaded ``tokenizers`` backend (or the slow shim) plus what its files declare: one
    derivation for the folder, the transformers fallback and the in-memory source, so they agree. ``ids``:
    the vocabulary's ids when the caller proved them without ``get_vocab`` (``vocab_ids``), else read here."""
    unbounded_options_off(backend)
    check_backend_growth(backend, folder / (files[0] if files else ""))
    if ids is None:
        ids = tuple(sorted(set(backend.get_vocab(with_added_tokens=True).values())))
    added = tuple(
        AddedTokenInfo(i, t.content, bool(t.special)) for i, t in sorted(backend.get_added_tokens_decoder().items())
    )
    special = {role: (content, backend.token_to_id(content)) for role, content in named.items()}
    extras = tuple((content, backend.token_to_id(content)) for content in extra)
    pair_types: tuple[int, ...] = ()
    if "token_type_ids" in names:
        try:
            with library_call(folder, "a tokenizer without a pair template"):
                pair_types = tuple(sorted(set(backend.encode("a", "b").type_ids)))
        except AuditError:  # a tokenizer without a pair template, or one the library cannot run
            pair_types = (0,)
    return TokenizerFacts(
        folder=folder,
        source=source,
        files=files,
        length=backend.get_vocab_size(with_added_tokens=True),
        ids=ids,
        added_tokens=added,
        special_tokens=special,
        extra_special_tokens=extras,
        model_max_length=model_max_length,
        chat_template=template,
        chat_template_file=template_file,
        tokenizer_class=tokenizer_class,
        model_input_names=names,
        pair_type_ids=pair_types,
        conflicts=conflicts,
        auto_map=auto_map,
        backend=backend,
    )
