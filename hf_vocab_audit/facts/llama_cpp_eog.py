"""The token ids llama.cpp stops generating at (its end-of-generation set, ``llama_vocab_is_eog``), from a GGUF's
vocabulary, or predicted from an HF folder for the GGUF ``convert_hf_to_gguf.py`` will write.

llama.cpp (as vendored by llama-cpp-python 0.3.36, ``llama_vocab::impl::load`` in ``src/llama-vocab.cpp``)
builds ``special_eog_ids`` once per load, and llama-server / llama-cli end a reply at any of them (else at
``n_predict``):

* the ids of ``tokenizer.ggml.fim_pad_token_id`` / ``fim_rep_token_id`` / ``fim_sep_token_id`` (each found by
  text when its key is absent: :data:`FIM_EOG_TEXTS`);
* every token whose text is one of :data:`EOG_TEXTS`, WHATEVER its type: one not typed CONTROL is retyped
  ("control-looking token ... its type will be overridden") and still stops generation;
* ``tokenizer.ggml.eos_token_id`` (without the key: the tokenizer model's default, :data:`DEFAULT_EOS`),
  ``eot_token_id`` and ``eom_token_id`` (an id past the token list is ignored: the default stays);
* then ``<|end|>`` is taken out when ``<|return|>`` and ``<|call|>`` (gpt-oss) or ``<|calls|>``/``<|call|>`` and
  ``<|flush|>`` (Solar-Open) are in the set, and ``</s>`` when ``<|tool_response>`` or ``<|plamo:eos|>`` is.

A token outside the set (a template's own ``<|turn_end|>`` that is neither eos nor eot) is written and generation
goes on. ``gguf.SpecialVocab`` (``gguf-py/gguf/vocab.py``, the same sdist), which ``convert_hf_to_gguf.py`` uses,
writes eos from ``tokenizer_config.json``'s ``eos_token`` (its id looked up among tokenizer.json's added tokens),
else ``config.json``'s integer ``eos_token_id``; it never reads ``generation_config.json`` and writes no eot or
eom for most architectures (:func:`converter_special_ids`).

:func:`llama_cpp_eog` asks llama.cpp itself where ``llama_cpp`` is importable; ``scripts/gguf_verdicts.py``
records its answers for the test GGUFs (``eog`` in ``tests/data/gguf_verdicts.json``) and the tests keep
:func:`eog_ids` equal to them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from ..errors import AuditError
from ..io.jsonfile import read_json_object

# The end-of-generation texts of ``llama_vocab::impl::load`` (llama-cpp-python 0.3.36), in its order.
EOG_TEXTS = (
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>", "<end_of_turn>",
    "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>",
    "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>", "<\uff5cend\u2581of\u2581sentence\uff5c>", "[e~[",
)
# The FIM pad / repo / file-separator texts, looked for when their key is absent; the id found is end-of-generation.
FIM_EOG_TEXTS = {
    "fim_pad": ("<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"),
    "fim_rep": ("<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"),
    "fim_sep": ("<|file_sep|>",),
}
# ``special_eos_id`` before the key is read, by ``tokenizer.ggml.model`` (the others: none).
DEFAULT_EOS = {"llama": 2, "gpt2": 11, "hybriddna": 11, "whitespace": 11, "t5": 1, "plamo2": 2}


def _valid(value: int | None, n_tokens: int) -> int | None:
    return value if value is not None and 0 <= value < n_tokens else None


def eog_set(find: Callable[[str], int | None], text_of: Callable[[int], str | None], n_tokens: int,
            special_ids: Mapping[str, int], tokenizer_model: str | None) -> dict[int, str]:
    """llama.cpp's end-of-generation ids, each with why it is one, for a vocabulary of ``n_tokens`` seen through
    ``find`` (text -> id) and ``text_of`` (id -> text); ``special_ids``: role -> id as the GGUF declares them
    (roles as ``llama_cpp_tables.SPECIAL_ID_KEYS``)."""
    out: dict[int, str] = {}
    for role, texts in FIM_EOG_TEXTS.items():
        declared = _valid(special_ids.get(role), n_tokens)
        if declared is not None:
            out.setdefault(declared, f"tokenizer.ggml.{role}_token_id")
            continue
        for text in texts:  # llama.cpp keeps the first it meets in a hash map: any of them may be the one
            found = find(text)
            if found is not None:
                out.setdefault(found, f"{role}, by its text")
    for text in EOG_TEXTS:
        found = find(text)
        if found is not None:
            out.setdefault(found, "its text")
    # a missing key, or one past the token list, leaves the tokenizer model's default
    eos = _valid(special_ids.get("eos"), n_tokens)
    if eos is None:
        eos = _valid(DEFAULT_EOS.get(tokenizer_model or ""), n_tokens)
    for role, value in (("eos", eos), ("eot", _valid(special_ids.get("eot"), n_tokens)),
                        ("eom", _valid(special_ids.get("eom"), n_tokens))):
        if value is not None:
            out.setdefault(value, f"tokenizer.ggml.{role}_token_id")
    by_text = {name: i for i in out if (name := text_of(i)) is not None}
    has_call = "<|call|>" in by_text or "<|calls|>" in by_text
    if "<|end|>" in by_text and has_call and ("<|return|>" in by_text or "<|flush|>" in by_text):
        del out[by_text["<|end|>"]]
    if "</s>" in by_text and ("<|tool_response>" in by_text or "<|plamo:eos|>" in by_text):
        del out[by_text["</s>"]]
    return out


def first_ids(tokens: Sequence[str]) -> dict[str, int]:
    """Text -> id of a token list, a text listed twice at its first id (built at C speed: the later entries of
    the reversed list are the earlier ids, and overwrite)."""
    return dict(zip(reversed(tokens), range(len(tokens) - 1, -1, -1)))


def eog_ids(tokens: Sequence[str], special_ids: Mapping[str, int], tokenizer_model: str | None,
            ids: Mapping[str, int] | None = None) -> dict[int, str]:
    """:func:`eog_set` of a GGUF's token list (a text listed twice: its first id); ``ids``: its
    :func:`first_ids`, when already made."""
    if ids is None:
        ids = first_ids(tokens)
    return eog_set(ids.get, lambda i: tokens[i] if 0 <= i < len(tokens) else None, len(tokens), special_ids,
                   tokenizer_model)


MAX_CLOSER = 256  # characters of the text after the answer that are matched (a real closer is a few)


def closing_token(special: Mapping[str, int], after: str, lengths: Sequence[int] | None = None) -> str | None:
    """The longest of ``special`` (text -> id of tokens llama.cpp matches whole: CONTROL / USER_DEFINED /
    UNKNOWN and the retyped end-of-generation texts) that ``after`` starts with, or None; ``lengths``: the
    distinct lengths of ``special``'s texts, longest first (computed when not given)."""
    head = after[:MAX_CLOSER]
    if lengths is None:
        lengths = sorted({len(t) for t in special if t}, reverse=True)
    return next((head[:n] for n in lengths if n <= len(head) and head[:n] in special), None)


def whole_tokens(tokens: Sequence[str], token_types: Sequence[int] | None,
                 ids: Mapping[str, int] | None = None) -> dict[str, int]:
    """Texts llama.cpp's tokenizer matches whole in a template's text (``parse_special``): CONTROL (3),
    USER_DEFINED (4) and UNKNOWN (2) tokens, and the end-of-generation texts it retypes CONTROL; a text listed
    twice at its first such id. ``ids``: the token list's :func:`first_ids`, when already made. Only the typed
    ids are visited one by one (a 128k vocabulary has a few hundred)."""
    out: dict[str, int] = {}
    if token_types is not None:
        n = len(tokens)
        for i in [i for i, kind in enumerate(token_types) if kind in (2, 3, 4) and i < n]:
            if tokens[i]:
                out.setdefault(tokens[i], i)
    if ids is None:
        ids = first_ids(tokens)
    for text in EOG_TEXTS:  # whatever its type, from its first id on (no earlier id is typed)
        if text in ids:
            out[text] = ids[text]
    return out


def converter_special_ids(folder: Path, n_tokens: int) -> dict[str, int]:
    """The eos / eot / eom ids ``gguf.SpecialVocab`` writes for ``folder`` (``_try_load_from_tokenizer_json``,
    then ``_try_load_from_config_json``; the first found wins): ``tokenizer_config.json``'s ``eos_token`` looked up
    among tokenizer.json's added tokens, else ``config.json``'s integer ``eos_token_id`` (or ``text_config``'s).
    eot / eom come only from a tokenizer.json post-processor whose last token is not the eos (not modelled) or
    from a model class's own code (GLM, ChatGLM, CodeGemma, CodeLlama): the generic path writes none."""
    found: dict[str, int] = {}

    def put(role: str, value: object) -> None:
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < n_tokens:
            found.setdefault(role, value)

    try:
        config_path, tok_path = folder / "tokenizer_config.json", folder / "tokenizer.json"
        if tok_path.is_file() and config_path.is_file():
            added = read_json_object(tok_path).get("added_tokens")
            entry = read_json_object(config_path).get("eos_token")
            content = entry.get("content") if isinstance(entry, dict) else entry
            if isinstance(content, str) and isinstance(added, list):
                put("eos", next((a.get("id") for a in added if isinstance(a, dict) and a.get("content") == content),
                                None))
        if (folder / "config.json").is_file():
            config = read_json_object(folder / "config.json")
            value = config.get("eos_token_id")
            text_config = config.get("text_config")
            if value is None and isinstance(text_config, dict):
                value = text_config.get("eos_token_id")
            put("eos", value)
    except (AuditError, json.JSONDecodeError):
        return found
    return found


def llama_cpp_eog(path: Path) -> frozenset[int] | None:
    """``llama_vocab_is_eog`` of every id of the GGUF at ``path``, loaded vocabulary-only by the installed
    llama-cpp-python; None where it is not importable or the file does not load."""
    try:
        import llama_cpp  # a fixed module name: the installed llama-cpp-python, never one the checkpoint names
    except Exception:  # noqa: BLE001 - not installed, or its shared library does not load
        return None
    llama_cpp.llama_backend_init()
    params = llama_cpp.llama_model_default_params()
    params.vocab_only = True
    model = llama_cpp.llama_model_load_from_file(str(path).encode(), params)
    if not model:
        return None
    try:
        vocab = llama_cpp.llama_model_get_vocab(model)
        n = int(llama_cpp.llama_vocab_n_tokens(vocab))
        return frozenset(i for i in range(n) if llama_cpp.llama_vocab_is_eog(vocab, i))
    finally:
        llama_cpp.llama_model_free(model)
