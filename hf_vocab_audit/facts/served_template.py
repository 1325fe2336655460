"""The chat template a serving engine renders, resolved the way that engine resolves it (``Consumer.template_load``):
which file it comes from, and the template files in the folder the engine does not read.

Imported only under ``--target`` (the chat rules import it in their bodies): a plain ``check DIR`` never reads
these files a second time.

TGI (3.3.4) does not load the tokenizer's template through transformers: its router parses the JSON files itself
with serde (``router/src/server.rs:1598-1688``, ``router/src/lib.rs:129-215``, ``router/src/infer/mod.rs:71-81``):
``chat_template.json``'s ``chat_template`` replaces ``tokenizer_config.json``'s; ``tokenizer_config.json`` is parsed
as ``HubTokenizerConfig`` and, when one of its typed fields does not parse, the whole file is dropped
(``from_file`` keeps ``serde_json::from_str(...).ok()``), template included; ``processor_config.json`` is parsed as
``HubProcessorConfig``, whose ``image_seq_len`` has no default (a file without it is dropped); a list of named
templates gives the one named ``"default"`` and nothing else; ``chat_template.jinja`` is never read.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import AuditError
from ..io.jsonfile import read_json_object
from .checkpoint import Facts
from .consumers import Consumer, TemplateLoad
from .tree import regular_file_inside

PROCESSOR_FILE = "chat_template.json"  # the processor's template (AutoProcessor); the tokenizer never reads it
JINJA_FILE = "chat_template.jinja"


@dataclass(frozen=True)
class ServedTemplate:
    """The template ``consumer`` renders (None: it resolves none), its file, and template files it leaves unread."""

    template: str | None
    file: str | None
    unread: tuple[str, ...] = ()  # files in the folder that hold a template the engine does not take
    why_unread: str = ""  # why, where it is not simply the file's name (TGI: a field of tokenizer_config.json)


def _json(folder: Path, name: str) -> dict[str, Any] | None:
    """``folder/name`` as a JSON object, None when absent or when it is not one (the engine drops it too)."""
    path = folder / name
    if not path.is_file():
        return None
    try:
        return read_json_object(regular_file_inside(path, folder))
    except AuditError:
        return None


def _is_str(value: object) -> bool:
    return isinstance(value, str)


def _template_versions(value: object) -> tuple[bool, str | None]:
    """serde's ``ChatTemplateVersions`` (untagged: a string, or a list of ``{name, template}`` strings): whether it
    parses, and the template TGI takes from it (the one named "default" of a list)."""
    if isinstance(value, str):
        return True, value
    if isinstance(value, list) and all(isinstance(t, dict) and _is_str(t.get("name")) and _is_str(t.get("template"))
                                       for t in value):
        return True, next((t["template"] for t in value if t["name"] == "default"), None)
    return False, None


def _token_field(value: object) -> bool:
    """serde's ``TokenizerConfigToken`` (untagged): a string, or an object whose ``content`` is a string."""
    return isinstance(value, str) or (isinstance(value, dict) and _is_str(value.get("content")))


# ``HubTokenizerConfig``'s typed fields (router/src/lib.rs:137-146), each ``Option<...>``: null or absent passes.
_TGI_TOKENIZER_FIELDS = (
    ("chat_template", lambda v: _template_versions(v)[0], "a string or a list of {name, template}"),
    ("completion_template", _is_str, "a string"),
    ("bos_token", _token_field, "a string or an object with a string content"),
    ("eos_token", _token_field, "a string or an object with a string content"),
    ("tokenizer_class", _is_str, "a string"),
    ("add_bos_token", lambda v: isinstance(v, bool), "a boolean"),
    ("add_eos_token", lambda v: isinstance(v, bool), "a boolean"),
)


def _tgi(folder: Path) -> ServedTemplate:
    """TGI's router: chat_template.json, else tokenizer_config.json (when it parses), else processor_config.json."""
    chosen: tuple[object, str] | None = None
    standalone = _json(folder, PROCESSOR_FILE)
    if standalone is not None and _template_versions(standalone.get("chat_template"))[0]:
        chosen = (standalone["chat_template"], PROCESSOR_FILE)
    dropped = ""
    config = _json(folder, "tokenizer_config.json") or {}
    bad = next(((key, want) for key, check, want in _TGI_TOKENIZER_FIELDS
                if config.get(key) is not None and not check(config[key])), None)
    if bad is not None:
        dropped = (f"tokenizer_config.json's {bad[0]} is not {bad[1]}, so TGI's HubTokenizerConfig does not parse "
                   "and the whole file is dropped")
    elif chosen is None and config.get("chat_template") is not None:
        chosen = (config["chat_template"], "tokenizer_config.json")
    if chosen is None:
        processor = _json(folder, "processor_config.json") or {}
        seq = processor.get("image_seq_len")
        if (isinstance(seq, int) and not isinstance(seq, bool) and 0 <= seq < 2**64  # serde's usize
                and processor.get("chat_template") is not None and _template_versions(processor["chat_template"])[0]):
            chosen = (processor["chat_template"], "processor_config.json")
    if chosen is not None:
        template = _template_versions(chosen[0])[1]
        if template is not None:
            return ServedTemplate(template, chosen[1])
        return ServedTemplate(None, None, (chosen[1],),
                              f"{chosen[1]}'s chat_template is a list with no template named \"default\"")
    unread = [JINJA_FILE] if (folder / JINJA_FILE).is_file() else []
    if dropped and config.get("chat_template") is not None:
        unread.append("tokenizer_config.json")
    return ServedTemplate(None, None, tuple(unread), dropped)


def served_template(consumer: Consumer, facts: Facts) -> ServedTemplate:
    """The template ``consumer`` renders for this checkpoint, for the engines whose ``template_load`` is
    ``TOKENIZER`` or ``ROUTER_JSON`` (vLLM's processor rules are the dataset layer's ``choose_template``)."""
    tok = facts.tokenizer
    if tok is None or consumer.template_load is None:
        return ServedTemplate(None, None)
    folder = tok.folder
    if consumer.template_load is TemplateLoad.ROUTER_JSON:
        return _tgi(folder) if folder.is_dir() else ServedTemplate(None, None)
    if tok.chat_template:  # the tokenizer's, as transformers loads it
        return ServedTemplate(tok.chat_template, tok.chat_template_file)
    unread = (PROCESSOR_FILE,) if folder.is_dir() and (folder / PROCESSOR_FILE).is_file() else ()
    return ServedTemplate(None, None, unread)


__all__ = ["ServedTemplate", "served_template"]
