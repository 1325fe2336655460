"""A sentence-transformers folder read the way sentence-transformers loads it.

``modules.json`` lists the pipeline's modules; the ``Transformer`` module's ``path`` (``""`` for the folder
itself, ``0_Transformer`` in older layouts) holds the transformers checkpoint and tokenizer, and its
``sentence_bert_config.json`` holds ``max_seq_length``: the length sentence-transformers truncates every input
to, whatever the tokenizer's ``model_max_length`` says; without it, the tokenizer's ``model_max_length`` capped
at ``max_position_embeddings`` (:meth:`SentenceTransformerFacts.effective_length`). So the audit reads the
checkpoint in that folder, and compares that effective length with the positions the model can use.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ..errors import AuditError
from ..io.jsonfile import loads, read_bytes, read_json_object

MAX_MODULES_BYTES = 1024 * 1024  # a list of a few modules
MAX_MODULES = 256


@dataclass(frozen=True)
class SentenceTransformerFacts:
    modules_file: Path  # modules.json
    module_path: str  # the Transformer module's path in it ("" for the folder itself)
    max_seq_length: int | None  # from the module's sentence_bert_config.json
    config_file: Path | None  # that sentence_bert_config.json, when present

    def effective_length(self, model_max_length: int | None,
                         max_position_embeddings: int | None) -> tuple[int, str] | None:
        """(the length sentence-transformers truncates every input to, how it gets there), None when unbounded.

        ``max_seq_length`` from sentence_bert_config.json when set. Without it, sentence-transformers' Transformer
        module caps the tokenizer's ``model_max_length`` at the config's ``max_position_embeddings`` (read in
        sentence-transformers 6.3, ``base/modules/transformer.py``: ``min(tokenizer.model_max_length,
        config.max_position_embeddings)`` unless that is -1; 2.x-5.x did the same in ``models/Transformer.py``).
        ``max_position_embeddings`` is not always the usable length: RoBERTa-style tables reserve their first
        ``padding_idx + 1`` rows, so an unset ``model_max_length`` lets 2 positions too many through.
        """
        if self.max_seq_length is not None:
            return self.max_seq_length, f"max_seq_length {self.max_seq_length}"
        mpe = max_position_embeddings if max_position_embeddings is not None and max_position_embeddings > 0 else None
        tokenizer = "unset" if model_max_length is None else str(model_max_length)
        if mpe is not None and (model_max_length is None or model_max_length > mpe):
            return mpe, (f"truncates to min(model_max_length {tokenizer}, max_position_embeddings {mpe}) = {mpe} "
                         "(no max_seq_length in sentence_bert_config.json)")
        if model_max_length is None:
            return None
        return model_max_length, (f"truncates to model_max_length {tokenizer} (no max_seq_length in "
                                  "sentence_bert_config.json)")


def _transformer_entry(path: Path) -> str | None:
    try:
        data = loads(read_bytes(path, MAX_MODULES_BYTES).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError, ValueError):
        raise AuditError(path, "is not valid JSON (sentence-transformers modules)") from None
    if not isinstance(data, list) or len(data) > MAX_MODULES:
        raise AuditError(path, f"must hold a list of at most {MAX_MODULES} modules")
    for entry in data:
        if not isinstance(entry, dict):
            raise AuditError(path, "every module must be a JSON object")
        kind, sub = entry.get("type"), entry.get("path", "")
        if isinstance(kind, str) and kind.rsplit(".", 1)[-1] == "Transformer":
            if not isinstance(sub, str):
                raise AuditError(path, 'the Transformer module\'s "path" must be a string')
            return sub
    return None


def sentence_transformer(folder: Path) -> tuple[Path, SentenceTransformerFacts | None]:
    """(the folder holding the checkpoint, the sentence-transformers facts) for ``folder``; a folder without
    ``modules.json``, or whose modules name no Transformer, is returned as it is with None."""
    modules = folder / "modules.json"
    if not modules.is_file():
        return folder, None
    sub = _transformer_entry(modules)
    if sub is None:
        return folder, None
    parts = PurePosixPath(sub).parts
    if PurePosixPath(sub).is_absolute() or ".." in parts or "\\" in sub:
        raise AuditError(modules, f'the Transformer module\'s path "{sub}" leaves the folder')
    module = folder.joinpath(*parts) if parts else folder
    if not module.is_dir():
        raise AuditError(modules, f'the Transformer module\'s path "{sub}" is not a folder')
    config = module / "sentence_bert_config.json"
    length = None
    if config.is_file():
        value = read_json_object(config).get("max_seq_length")
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise AuditError(config, f'"max_seq_length" must be a positive integer, not {value!r}')
        length = value
    return module, SentenceTransformerFacts(modules, sub, length, config if config.is_file() else None)
