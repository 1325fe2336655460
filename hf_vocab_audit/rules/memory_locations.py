"""Findings on objects in memory: the rules name the files ``save_pretrained`` would write
(``tokenizer_config.json``, ``config.json``) and advise ``hf-vocab-audit check DIR --fix``; for a live model
and tokenizer (``audit(model=..., tokenizer=...)``, the guard's preflight in a Trainer) neither the files nor
the folder exist. A memory report names the objects instead: the location (``<tokenizer>``,
``<model>.config``), the message (``model.config vocab_size is 128``), the details' sources, and the fix
advice, which is the call to make on the objects (``model.resize_token_embeddings(...)``,
``tokenizer.add_special_tokens(...)``). The ``--fix`` edits a finding carries are dropped: they rewrite a
folder's files, and there is none to run them on.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from ..core.findings import Finding
from ..facts.sources.memory import MODEL_FILE, TOKENIZER_FILE

OBJECTS = {
    "tokenizer_config.json": TOKENIZER_FILE,
    "tokenizer.json": TOKENIZER_FILE,
    "special_tokens_map.json": TOKENIZER_FILE,
    "added_tokens.json": TOKENIZER_FILE,
    "chat_template.jinja": f"{TOKENIZER_FILE}.chat_template",
    "config.json": f"{MODEL_FILE}.config",
    "generation_config.json": f"{MODEL_FILE}.generation_config",
}

# The same files as a message names them, written as the Python a user types on the live objects.
_SPOKEN = {
    "tokenizer_config.json": "tokenizer",
    "tokenizer.json": "tokenizer",
    "special_tokens_map.json": "tokenizer",
    "added_tokens.json": "tokenizer",
    "chat_template.jinja": "tokenizer.chat_template",
    "config.json": "model.config",
    "generation_config.json": "model.generation_config",
}
# A file name standing alone: "generation_config.json" is not "config.json" preceded by "generation_".
_FILE_NAME = re.compile(r"(?<![\w./-])(" + "|".join(re.escape(n) for n in sorted(_SPOKEN, key=len, reverse=True))
                        + r")(?![\w-])")

_RESIZE = "model.resize_token_embeddings(len(tokenizer))"
_SET_PAD = ("`model.config.pad_token_id = tokenizer.pad_token_id` (and the same on `model.generation_config`)")
_MAX_LENGTH = ("Set `tokenizer.model_max_length` to the usable positions (the model's position rows, less any "
               "it reserves) before tokenizing with `truncation=True`.")

# Fix advice for a live pair, by rule: what to call on the objects (the rule's own advice names files and
# `check DIR --fix`). A rule not listed advises nothing folder-bound.
HINTS: Mapping[str, str] = {
    "HVA101": (f"Grow the embeddings to cover every id: `{_RESIZE}`, only when the tokenizer is larger (never "
               "shrink: padded rows are trained), after `tokenizer.add_tokens`/`add_special_tokens` and before "
               "training."),
    "HVA102": (f"`{_RESIZE}` (transformers resizes an untied lm_head together with the input side), only when "
               "the tokenizer is larger."),
    "HVA103": ("Set `model.config.vocab_size` to the real number of rows, "
               "`model.get_input_embeddings().weight.shape[0]` (`model.resize_token_embeddings` keeps it in step)."),
    "HVA104": ("Resize both to the same number of rows: `model.resize_token_embeddings(N)` with the larger "
               "count (grow the smaller one, never shrink the larger)."),
    "HVA106": (f"`{_RESIZE}` resizes `final_logits_bias` together with the embeddings. A bias longer than the "
               "rows is not cut: decide which size is right."),
    "HVA206": (f"Grow the embeddings to cover the marker's id (`{_RESIZE}`), or set this model's own "
               "template on `tokenizer.chat_template`."),
    "HVA212": "Set the value on `model.generation_config` (and delete it from `model.config` to avoid the confusion).",
    "HVA301": _MAX_LENGTH,
    "HVA302": ("Use the model's own tokenizer, or drop `token_type_ids` (`return_token_type_ids=False`, or "
               "`tokenizer.model_input_names` without it)."),
    "HVA303": _MAX_LENGTH,
}
_CTC = ("grow the CTC head to the tokenizer before fine-tuning: build the model again with "
        "`vocab_size=len(tokenizer), ignore_mismatched_sizes=True` (the head is re-initialised), or drop the tokens")
_PAD_CANDIDATE = re.compile(r"use (.+) \(id (\d+)\), a special token nothing else uses")


def _pad_hint(folder_hint: str | None) -> str:
    """HVA203/HVA204: the pad token the rule picked (when this tokenizer has one), set on the objects."""
    picked = _PAD_CANDIDATE.match(folder_hint or "")
    if picked is not None:
        return (f"use {picked.group(1)} (id {picked.group(2)}), a special token nothing else uses, as pad: "
                f"`tokenizer.pad_token = {picked.group(1)}`, then {_SET_PAD}")
    return ("this tokenizer has no unused special token to pad with: "
            f"`tokenizer.add_special_tokens({{'pad_token': '<pad>'}})` and `{_RESIZE}`, then {_SET_PAD}")


def _hint(f: Finding) -> str | None:
    if f.code in ("HVA203", "HVA204"):
        return _pad_hint(f.hint)
    if f.code == "HVA102" and f.hint is not None and "CTC head to the tokenizer" in f.hint:
        return _CTC
    if f.code == "HVA201":
        return _special_id_hint(f.location.file, f.location.key)
    if f.code == "HVA202":
        key = f.location.key if f.location.key and f.location.key.endswith("_token_id") else "eos_token_id"
        return (f"Make all three agree with the token the model was trained to emit: `model.config.{key} = "
                f"tokenizer.{key}`, and `model.generation_config.{key}` holding it (it may list several eos "
                "ids; it must include the tokenizer's).")
    return HINTS.get(f.code, f.hint)


def id_setting(file: str | None, key: str | None) -> str:
    """The assignment that points a special id at the tokenizer's, on the object that holds it."""
    holder = _SPOKEN.get(file or "") or {v: _SPOKEN[k] for k, v in OBJECTS.items()}.get(file or "", "model.config")
    if key and key.endswith("_token_id") and holder != "tokenizer":
        return f"`{holder}.{key} = tokenizer.{key}`"
    if key:
        return f"set `{holder}.{key}` to the id of the token meant"
    return "set it to the id of the token meant"


def _special_id_hint(file: str | None, key: str | None) -> str:
    """HVA201: set the id named on the object it is on to the tokenizer's (usually right), or grow."""
    return (f"Point the id at the right token (usually the tokenizer's): {id_setting(file, key)}; or grow the "
            f"embeddings if the token is real: `{_RESIZE}`.")


def spoken(text: str) -> str:
    """``text`` with each file name a live pair has no such file of replaced by the object it is on."""
    return _FILE_NAME.sub(lambda m: _SPOKEN[m.group(1)], text)


def details_on_objects(value: Any) -> Any:
    """The details with every ``file`` naming such a file (the sources an id was read from) renamed."""
    if isinstance(value, dict):
        return {k: (OBJECTS.get(v, v) if k == "file" and isinstance(v, str) else details_on_objects(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [details_on_objects(v) for v in value]
    return value


def on_objects(findings: Iterable[Finding]) -> list[Finding]:
    """``findings`` as a live model and tokenizer have them: objects named where the rules name files, the
    advice a call on the objects, and no ``--fix`` edit (there is no folder to apply it to)."""
    out = []
    for f in findings:
        name = OBJECTS.get(f.location.file or "")
        location = replace(f.location, file=name, line=None) if name else f.location
        out.append(replace(f, location=location, message=spoken(f.message), hint=_hint(f), fix=None,
                           details=details_on_objects(f.details)))
    return out
