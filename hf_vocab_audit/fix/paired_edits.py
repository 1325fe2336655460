"""What ``--fix`` reads to carry out the fixes of a pair (``check FT --base BASE``) and of a serving target: the
base checkpoint's rows and chat template, a template saved where the engine does not read it, and the stop ids.

The base is untrusted like the target: it is read from a local folder only (a Hub base's rows are never
downloaded), its files through the same bounded readers, and never executed. Each reader returns what it read,
or one line saying why the fix cannot be applied: the plan reports that line for the finding it leaves alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core.fixes import CopyBaseChatTemplate, CopyBaseRows, WriteChatTemplate
from ..errors import AuditError
from ..facts import Facts, gather
from ..facts.tree import regular_file_inside
from ..facts.vocab_geometry import vocab_dim
from ..facts.weight_formats.registry import format_of
from ..io.jsonfile import MAX_CONFIG_BYTES, loads, read_bytes
from .repair_plan import BaseRowSource, JsonEdit

MAX_TEMPLATE_BYTES = MAX_CONFIG_BYTES  # a chat template file (the readers' bound for a config file)


class BaseReader:
    """The base checkpoints the fixes name, each read once (its JSON files and tensor headers, no rows)."""

    def __init__(self) -> None:
        self._facts: dict[str, Facts | str] = {}

    def facts(self, base: str) -> Facts | str:
        """The base's facts, or why they cannot be read here."""
        if base not in self._facts:
            self._facts[base] = self._read(base)
        return self._facts[base]

    @staticmethod
    def _read(base: str) -> Facts | str:
        folder = Path(base)
        if not folder.is_dir():
            return f"the base {base} is not a local folder: --fix reads the base's files from one"
        try:
            return gather(folder)
        except AuditError as exc:
            return f"the base cannot be read: {exc}"

    def rows(self, edit: CopyBaseRows, *, facts: Facts) -> BaseRowSource | str:
        """Where ``edit``'s rows are in the base, or why they cannot be appended to the fine-tune's tensor as
        they are (the two must differ only in their rows, and both be safetensors)."""
        base = self.facts(edit.base)
        if isinstance(base, str):
            return base
        ours = facts.tensors.tensors.get(edit.tensor) if facts.tensors is not None else None
        theirs = base.tensors.tensors.get(edit.base_tensor) if base.tensors is not None else None
        if ours is None or theirs is None:
            return f"{edit.tensor if ours is None else edit.base_tensor} is not in the weight files"
        if not format_of(facts.required_tensors()).byte_ranges or not format_of(base.required_tensors()).byte_ranges:
            return "the fine-tune's or the base's weights are not safetensors: --fix copies rows by offset"
        if len(ours.shape) != 2 or len(theirs.shape) != 2 or ours.shape[1] != theirs.shape[1]:
            return f"{edit.tensor} {list(ours.shape)} and the base's {edit.base_tensor} {list(theirs.shape)} differ"
        if ours.dtype != theirs.dtype:
            return f"{edit.tensor} is {ours.dtype}, the base's {edit.base_tensor} {theirs.dtype}"
        if not vocab_dim(ours) < vocab_dim(theirs) == edit.rows:
            return f"the base's {edit.base_tensor} no longer has {edit.rows} rows"
        return BaseRowSource(base.model_dir / theirs.file, theirs)

    def template(self, edit: CopyBaseChatTemplate) -> bytes | str:
        """The base file that holds its chat template (``edit.file``), or why it cannot be copied."""
        base = self.facts(edit.base)
        if isinstance(base, str):
            return base
        tok = base.tokenizer
        if tok is None or tok.chat_template_file != edit.file:
            return f"the base no longer has its chat template in {edit.file}"
        data = _read_inside(tok.folder / edit.file, tok.folder)
        if isinstance(data, str) or edit.file != "tokenizer_config.json":
            return data
        parsed = _parsed(data)
        if not isinstance(parsed, dict) or not isinstance(parsed.get("chat_template"), (str, list)):
            return f"the base's {edit.file} holds no chat_template --fix can copy"
        return data


def _read_inside(path: Path, root: Path) -> bytes | str:
    try:
        return read_bytes(regular_file_inside(path, root), MAX_TEMPLATE_BYTES)
    except (AuditError, OSError) as exc:
        return f"{path.name} cannot be read: {exc}"


def _parsed(data: bytes) -> Any:
    try:
        return loads(data)
    except ValueError:
        return None


def json_key_of(data: bytes, key: str) -> Any:
    """``key`` of the JSON object in ``data`` (a file :class:`BaseReader` checked)."""
    parsed = _parsed(data)
    assert isinstance(parsed, dict)
    return parsed[key]


def chat_template_bytes(facts: Facts, edit: WriteChatTemplate) -> bytes | str:
    """The template ``edit.source`` (``chat_template.json``) holds, as the text to write to ``edit.file``, or why
    there is none to move (a processor's list of named templates is left to the user)."""
    tok = facts.tokenizer
    if tok is None:
        return "there is no tokenizer folder to write the template into"
    if (tok.folder / edit.file).exists():
        return f"{edit.file} exists already"
    data = _read_inside(tok.folder / edit.source, tok.folder)
    if isinstance(data, str):
        return data
    parsed = _parsed(data)
    template = parsed.get("chat_template") if isinstance(parsed, dict) else None
    if not isinstance(template, str) or not template.strip():
        return f"{edit.source} holds no single chat_template string to move"
    return template.encode("utf-8")


def stop_id_edits(facts: Facts, ids: list[int]) -> list[JsonEdit]:
    """The edits that make generation_config.json's ``eos_token_id`` a list holding its ids and ``ids``: when the
    file is absent it is created with config.json's bos/eos/pad ids (what transformers derives from config.json
    when there is no generation_config.json), so nothing else about generation changes."""
    gen = facts.generation
    part = gen if gen is not None else facts.config
    have = list(part.special.ids.get("eos_token_id") or ())
    edits = [JsonEdit("generation_config.json", "eos_token_id", [*have, *(i for i in ids if i not in have)])]
    if gen is None:
        for key in ("bos_token_id", "pad_token_id"):
            found = facts.config.special.ids.get(key)
            if found:
                edits.append(JsonEdit("generation_config.json", key, found[0] if len(found) == 1 else list(found)))
    return edits


__all__ = ["BaseReader", "chat_template_bytes", "json_key_of", "stop_id_edits"]
