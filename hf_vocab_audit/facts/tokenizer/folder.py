"""Tokenizer facts from a folder. Fast path: ``tokenizer.json`` through the ``tokenizers`` library, then
the same additions transformers makes on load (``added_tokens_decoder``, named and extra special tokens
missing from the vocabulary); it never imports transformers or torch. A folder with only slow files
(``vocab.txt``, ``tokenizer.model``) falls back to ``AutoTokenizer`` with ``trust_remote_code=False``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...core.lifetime import keep_until_exit
from ...errors import AuditError
from ...io.jsonfile import MAX_TOKENIZER_BYTES, check_inside, read_bytes
from ...io.stand_in import refuse_stand_in
from ..transformers_tables import model_input_names, tokenizer_class_for
from ..tree import check_tree
from . import ROLES, VERY_LARGE, TokenizerFacts, facts_of_backend, parse_max_length
from .added_tokens import AddedTokenConflict, added_contents, added_tokens_decoder, tokenizer_json_conflicts
from .bounded_calls import check_precompiled_charsmaps, library_call, unbounded_options_off
from .config import find_chat_template, read_config, special_strings
from .normalizer_growth import check_normalizer_growth
from .slow_files import check_slow_folder
from .vocab_ids import contiguous_vocab_ids

SLOW_FILES = ("vocab.txt", "tokenizer.model", "spiece.model", "spm.model", "sentencepiece.bpe.model", "vocab.json", "source.spm")


def has_tokenizer(folder: Path) -> bool:
    """Whether ``folder`` holds tokenizer files (fast or slow)."""
    return (folder / "tokenizer.json").exists() or any((folder / n).exists() for n in SLOW_FILES)


def load_tokenizer(folder: Path, model_type: str | None = None) -> TokenizerFacts:
    """Tokenizer facts for ``folder``; fast path when ``tokenizer.json`` exists."""
    path = folder / "tokenizer.json"
    if not path.exists():
        return load_tokenizer_via_transformers(folder, model_type)
    check_inside(path, folder)
    from tokenizers import AddedToken, Tokenizer

    refuse_stand_in(path, binary=False)  # tokenizer.json is often stored in Git LFS too
    raw = read_bytes(path, MAX_TOKENIZER_BYTES)
    # The library parses the bytes (as Tokenizer.from_file does): decoding 10 MB to a str here and the
    # library encoding it back to UTF-8 cost a tenth of the parse. A file refused on the way is then checked
    # for UTF-8 first, so that message stays the one a user sees (the library accepts only UTF-8 JSON).
    try:
        check_precompiled_charsmaps(raw, path)
        check_normalizer_growth(raw, path)  # loading normalizes the added tokens: bounded before it
        with library_call(path, "is not a tokenizer the tokenizers library can load"):
            backend = unbounded_options_off(Tokenizer.from_buffer(raw))
            ids = contiguous_vocab_ids(backend)  # our own backend; the model's ids proved while we go on
        keep_until_exit(backend)  # the command line does not spend ~30 ms freeing it after the verdict
    except AuditError:
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            raise AuditError(path, "is not valid UTF-8") from None
        raise
    config = read_config(folder, "tokenizer_config.json")
    special_map = read_config(folder, "special_tokens_map.json")
    files = ["tokenizer.json"] + [
        n for n in ("tokenizer_config.json", "special_tokens_map.json") if (folder / n).exists()
    ]

    # What transformers does on load, in the same order (TokenizersBackend.__init__), each group of
    # additions in one call (one at a time is quadratic: the library rebuilds its matcher per call).
    conflicts: list[AddedTokenConflict] = []
    declared = added_tokens_decoder(path.parent / "tokenizer_config.json", config)
    with library_call(path, "the tokenizers library failed to add the declared tokens"):
        present = {t.content for t in backend.get_added_tokens_decoder().values()}
        to_add: dict[str, AddedToken] = {}
        for token_id, (content, special) in sorted(declared.items()):
            puts = f"added_tokens_decoder puts {content!r} at id {token_id}"
            existing = backend.token_to_id(content)
            if existing is not None and existing != token_id:
                conflicts.append(AddedTokenConflict("tokenizer_config.json", f"{puts}, tokenizer.json at id {existing}",
                                                    (token_id, existing), (content,)))
            holder = backend.id_to_token(token_id)
            if holder is not None and holder != content:
                conflicts.append(AddedTokenConflict("tokenizer_config.json", f"{puts}, where tokenizer.json has {holder!r}",
                                                    (token_id,), (content, holder)))
            if content not in present and content not in to_add:
                to_add[content] = AddedToken(content, special=special, normalized=not special)
        if to_add:
            backend.add_tokens(list(to_add.values()))
        # transformers reads special_tokens_map.json (over tokenizer_config.json) only for legacy folders
        # whose tokenizer_config.json has no added_tokens_decoder.
        named, extra = special_strings(config if "added_tokens_decoder" in config else config | special_map)
        added = added_contents(backend)  # once: rebuilding this set per token is quadratic
        specials = [c for c in dict.fromkeys([*named.values(), *extra]) if c not in added]
        if specials:
            backend.add_tokens([AddedToken(c, special=True, normalized=False) for c in specials])
        conflicts.extend(tokenizer_json_conflicts(raw, backend))

    template, template_file = find_chat_template(folder, config)
    tokenizer_class = config.get("tokenizer_class") if isinstance(config.get("tokenizer_class"), str) else None
    names = config.get("model_input_names")
    if not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
        names = model_input_names(tokenizer_class or tokenizer_class_for(model_type))
    return facts_of_backend(
        folder=folder,
        source="tokenizers",
        files=tuple(files + ([template_file] if template_file == "chat_template.jinja" else [])),
        backend=backend,
        named=named,
        extra=extra,
        model_max_length=parse_max_length(folder / "tokenizer_config.json", config.get("model_max_length")),
        template=template,
        template_file=template_file,
        tokenizer_class=tokenizer_class,
        names=tuple(names),
        conflicts=tuple(conflicts),
        auto_map=config.get("auto_map") if isinstance(config.get("auto_map"), dict) else None,
        ids=ids,
    )


def load_tokenizer_via_transformers(folder: Path, model_type: str | None = None) -> TokenizerFacts:
    """The reference path: ``AutoTokenizer.from_pretrained`` (imports torch; never remote code)."""
    if not any((folder / n).exists() for n in SLOW_FILES + ("tokenizer.json",)):
        raise AuditError(folder, "has no tokenizer files (tokenizer.json, vocab.txt, tokenizer.model, ...)")
    check_tree(folder, "tokenizer folder")  # transformers opens files by names we do not control
    check_slow_folder(folder)  # stand-ins, sizes, piece counts and lengths, charsmaps, tokenizer_class
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
        from .slow import SlowBackend

        backend = SlowBackend(tok)  # Marian / SentencePiece-only: no fast converter exists
    else:
        raise AuditError(folder, f"{type(tok).__name__} is not a tokenizer the audit can read")
    config = read_config(folder, "tokenizer_config.json")
    named = {role: str(getattr(tok, f"{role}_token")) for role in ROLES if getattr(tok, f"{role}_token", None)}
    extra = [str(t) for t in getattr(tok, "extra_special_tokens", []) or []]
    if isinstance(getattr(tok, "extra_special_tokens", None), dict):
        extra = [str(t) for t in tok.extra_special_tokens.values()]
    template = tok.chat_template if isinstance(tok.chat_template, str) else None
    files = tuple(n for n in SLOW_FILES + ("tokenizer_config.json", "special_tokens_map.json") if (folder / n).exists())
    template_file = "chat_template.jinja" if (folder / "chat_template.jinja").exists() else "tokenizer_config.json"
    return facts_of_backend(
        folder=folder,
        source="transformers",
        files=files,
        backend=backend,
        named=named,
        extra=extra,
        model_max_length=None if tok.model_max_length >= VERY_LARGE else int(tok.model_max_length),
        template=template,
        template_file=template_file if template else None,
        tokenizer_class=type(tok).__name__,
        names=tuple(tok.model_input_names),
        conflicts=(),
        auto_map=config.get("auto_map") if isinstance(config.get("auto_map"), dict) else None,
    )
