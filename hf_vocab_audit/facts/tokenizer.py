"""Tokenizer facts exactly as ``AutoTokenizer`` (transformers 5) presents them to users.

Fast path: ``tokenizer.json`` through the ``tokenizers`` library, then the same additions
transformers makes on load (``added_tokens_decoder``, named and extra special tokens missing from
the vocabulary). It never imports transformers or torch. A folder with only slow files
(``vocab.txt``, ``tokenizer.model``) falls back to ``AutoTokenizer`` with ``trust_remote_code=False``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from ..errors import AuditError
from ..io.jsonfile import MAX_TOKENIZER_BYTES, check_inside, read_bytes, read_json_object
from .added_tokens import AddedTokenConflict, AddedTokenInfo
from .added_tokens import added_contents as _added_contents
from .added_tokens import added_tokens_decoder as _added_tokens_decoder
from .added_tokens import token_content as _token_content
from .added_tokens import tokenizer_json_conflicts as _tokenizer_json_conflicts
from .chat_template import control_strings
from .tokenizer_guard import check_precompiled_charsmaps, library_call, unbounded_options_off
from .transformers_tables import model_input_names, tokenizer_class_for
from .tree import check_tree

ROLES = ("bos", "eos", "unk", "sep", "pad", "cls", "mask")
VERY_LARGE = int(1e29)  # transformers' VERY_LARGE_INTEGER (1e30) means "no limit set"
SLOW_FILES = ("vocab.txt", "tokenizer.model", "spiece.model", "sentencepiece.bpe.model", "vocab.json", "source.spm")


@dataclass(frozen=True)
class TokenizerFacts:
    folder: Path
    source: str  # "tokenizers" (fast path) or "transformers" (slow-file fallback)
    files: tuple[str, ...]
    length: int  # len(tokenizer)
    max_id: int  # the largest id the tokenizer can emit
    ids: tuple[int, ...] = field(repr=False)  # every id in the vocabulary, sorted
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
    def returns_token_type_ids(self) -> bool:
        return "token_type_ids" in self.model_input_names

    def id_to_token(self, token_id: int) -> str | None:
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


def _special_strings(config: dict[str, Any]) -> tuple[dict[str, str], list[str]]:
    named: dict[str, str] = {}
    for role in ROLES:
        content = _token_content(config.get(f"{role}_token"))
        if content is not None:
            named[role] = content
    extra: dict[str, None] = {}  # ordered and deduplicated in linear time
    for key in ("extra_special_tokens", "additional_special_tokens"):
        value = config.get(key)
        values = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
        for item in values:
            content = _token_content(item)
            if content is not None:
                extra.setdefault(content)
    return named, list(extra)


def _find_chat_template(folder: Path, config: dict[str, Any]) -> tuple[str | None, str | None]:
    jinja = folder / "chat_template.jinja"
    if jinja.is_file():
        check_inside(jinja, folder)
        try:
            return read_bytes(jinja, 16 * 1024 * 1024).decode("utf-8"), jinja.name
        except UnicodeDecodeError:
            raise AuditError(jinja, "is not valid UTF-8") from None
    template = config.get("chat_template")
    if isinstance(template, list):  # [{"name": "default", "template": "..."}, ...]
        named = {t.get("name"): t.get("template") for t in template if isinstance(t, dict)}
        template = named.get("default") or next(iter(named.values()), None)
    if isinstance(template, str):
        return template, "tokenizer_config.json"
    return None, None


def _read_config(folder: Path, name: str) -> dict[str, Any]:
    path = folder / name
    if not path.exists():
        return {}
    check_inside(path, folder)
    data = read_json_object(path)
    try:  # the tokenizers library (Rust) rejects lone surrogates such as "\ud800" that JSON allows
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise AuditError(path, f"holds a string that is not valid Unicode ({exc.object[exc.start]!r})") from None
    return data


def has_tokenizer(folder: Path) -> bool:
    return (folder / "tokenizer.json").exists() or any((folder / n).exists() for n in SLOW_FILES)


def load_tokenizer(folder: Path, model_type: str | None = None) -> TokenizerFacts:
    """Tokenizer facts for ``folder``; fast path when ``tokenizer.json`` exists."""
    path = folder / "tokenizer.json"
    if not path.exists():
        return load_tokenizer_via_transformers(folder, model_type)
    check_inside(path, folder)
    from tokenizers import AddedToken, Tokenizer

    raw = read_bytes(path, MAX_TOKENIZER_BYTES)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise AuditError(path, "is not valid UTF-8") from None
    check_precompiled_charsmaps(raw, path)
    with library_call(path, "is not a tokenizer the tokenizers library can load"):
        backend = unbounded_options_off(Tokenizer.from_str(text))
    config = _read_config(folder, "tokenizer_config.json")
    special_map = _read_config(folder, "special_tokens_map.json")
    files = ["tokenizer.json"] + [
        n for n in ("tokenizer_config.json", "special_tokens_map.json") if (folder / n).exists()
    ]

    # What transformers does on load, in the same order (TokenizersBackend.__init__), each group of
    # additions in one call (one at a time is quadratic: the library rebuilds its matcher per call).
    conflicts: list[AddedTokenConflict] = []
    declared = _added_tokens_decoder(path.parent / "tokenizer_config.json", config)
    with library_call(path, "the tokenizers library failed to add the declared tokens"):
        present = {t.content for t in backend.get_added_tokens_decoder().values()}
        to_add: dict[str, AddedToken] = {}
        for token_id, (content, special) in sorted(declared.items()):
            existing = backend.token_to_id(content)
            if existing is not None and existing != token_id:
                conflicts.append(
                    AddedTokenConflict(
                        "tokenizer_config.json",
                        f"added_tokens_decoder puts {content!r} at id {token_id}, tokenizer.json at id {existing}",
                        (token_id, existing),
                        (content,),
                    )
                )
            holder = backend.id_to_token(token_id)
            if holder is not None and holder != content:
                conflicts.append(
                    AddedTokenConflict(
                        "tokenizer_config.json",
                        f"added_tokens_decoder puts {content!r} at id {token_id}, where tokenizer.json has {holder!r}",
                        (token_id,),
                        (content, holder),
                    )
                )
            if content not in present and content not in to_add:
                to_add[content] = AddedToken(content, special=special, normalized=not special)
        if to_add:
            backend.add_tokens(list(to_add.values()))
        # transformers reads special_tokens_map.json (over tokenizer_config.json) only for legacy folders
        # whose tokenizer_config.json has no added_tokens_decoder.
        named, extra = _special_strings(config if "added_tokens_decoder" in config else config | special_map)
        added = _added_contents(backend)  # once: rebuilding this set per token is quadratic
        specials = [c for c in dict.fromkeys([*named.values(), *extra]) if c not in added]
        if specials:
            backend.add_tokens([AddedToken(c, special=True, normalized=False) for c in specials])
        conflicts.extend(_tokenizer_json_conflicts(raw, backend))

    template, template_file = _find_chat_template(folder, config)
    tokenizer_class = config.get("tokenizer_class") if isinstance(config.get("tokenizer_class"), str) else None
    names = config.get("model_input_names")
    if not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
        names = model_input_names(tokenizer_class or tokenizer_class_for(model_type))
    return _facts(
        folder,
        "tokenizers",
        tuple(files + ([template_file] if template_file == "chat_template.jinja" else [])),
        backend,
        named,
        extra,
        _max_length(folder / "tokenizer_config.json", config.get("model_max_length")),
        template,
        template_file,
        tokenizer_class,
        tuple(names),
        tuple(conflicts),
        config.get("auto_map") if isinstance(config.get("auto_map"), dict) else None,
    )


def _max_length(path: Path, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise AuditError(path, f'"model_max_length" must be a positive integer, not {value!r}'[:200])
    return None if value >= VERY_LARGE else value


def _facts(
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
) -> TokenizerFacts:
    unbounded_options_off(backend)
    vocab = backend.get_vocab(with_added_tokens=True)
    ids = tuple(sorted(set(vocab.values())))
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
        max_id=ids[-1] if ids else -1,
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


def load_tokenizer_via_transformers(folder: Path, model_type: str | None = None) -> TokenizerFacts:
    """The reference path: ``AutoTokenizer.from_pretrained`` (imports torch; never remote code)."""
    if not any((folder / n).exists() for n in SLOW_FILES + ("tokenizer.json",)):
        raise AuditError(folder, "has no tokenizer files (tokenizer.json, vocab.txt, tokenizer.model, ...)")
    check_tree(folder, "tokenizer folder")  # transformers opens files by names we do not control
    with library_call(folder, "the tokenizer cannot be loaded by transformers"):  # a panic included
        from transformers import AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        try:
            tok = AutoTokenizer.from_pretrained(str(folder), trust_remote_code=False, local_files_only=True)
        except Exception:  # noqa: BLE001 - no fast converter: the slow (SentencePiece) tokenizer, as users load it
            tok = AutoTokenizer.from_pretrained(str(folder), use_fast=False, trust_remote_code=False,
                                                local_files_only=True)
    fast = getattr(tok, "backend_tokenizer", None)
    backend: Any
    if fast is not None:
        from tokenizers import Tokenizer

        with library_call(folder, "the tokenizer converted by transformers cannot be loaded"):
            backend = unbounded_options_off(Tokenizer.from_str(fast.to_str()))
    elif callable(getattr(tok, "get_vocab", None)):
        from .slow_tokenizer import SlowBackend

        backend = SlowBackend(tok)  # Marian / SentencePiece-only: no fast converter exists
    else:
        raise AuditError(folder, f"{type(tok).__name__} is not a tokenizer the audit can read")
    config = _read_config(folder, "tokenizer_config.json")
    named = {role: str(getattr(tok, f"{role}_token")) for role in ROLES if getattr(tok, f"{role}_token", None)}
    extra = [str(t) for t in getattr(tok, "extra_special_tokens", []) or []]
    if isinstance(getattr(tok, "extra_special_tokens", None), dict):
        extra = [str(t) for t in tok.extra_special_tokens.values()]
    template = tok.chat_template if isinstance(tok.chat_template, str) else None
    files = tuple(n for n in SLOW_FILES + ("tokenizer_config.json", "special_tokens_map.json") if (folder / n).exists())
    return _facts(
        folder,
        "transformers",
        files,
        backend,
        named,
        extra,
        None if tok.model_max_length >= VERY_LARGE else int(tok.model_max_length),
        template,
        ("chat_template.jinja" if (folder / "chat_template.jinja").exists() else "tokenizer_config.json")
        if template
        else None,
        type(tok).__name__,
        tuple(tok.model_input_names),
        (),
        config.get("auto_map") if isinstance(config.get("auto_map"), dict) else None,
    )
