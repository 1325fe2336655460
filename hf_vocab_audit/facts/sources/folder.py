"""The folder source: the facts of a local checkpoint folder (and a separate tokenizer folder).

The Hub source (:mod:`.hub`) checks a commit's small files out into a folder and supplies the tensor
headers it read remotely; a source of objects in memory builds the same :class:`Facts` from live objects.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from ...core.options import AuditOptions
from ...errors import AuditError
from ..checkpoint import Facts
from ..config import load_config, load_generation_config
from ..embeddings import find_embeddings
from ..sentence_transformers import sentence_transformer
from ..tensors import CheckpointTensors, load_tensors
from ..tokenizer import TokenizerFacts
from ..tokenizer.folder import has_tokenizer, load_tokenizer
from ..tree import check_tree, existing_folder
from . import FactsSource, SourceError


def gather(
    model_dir: str | Path,
    tokenizer_dir: str | Path | None = None,
    *,
    tensors_from: Callable[[Path], CheckpointTensors | None] = load_tensors,
    tokenizer_facts: TokenizerFacts | None = None,
) -> Facts:
    """Read every fact the static rules need from ``model_dir`` (and a separate tokenizer folder).

    ``tensors_from`` supplies the tensor headers (the Hub source reads them remotely); ``tokenizer_facts``
    reuses facts already read from byte-identical tokenizer files (``--fix`` re-reading its output).
    """
    folder = existing_folder(Path(model_dir), "model folder")
    check_tree(folder)  # links and devices at any depth, before anything below opens a file
    folder, sentence = sentence_transformer(folder)  # modules.json: the checkpoint sentence-transformers loads
    config_path = folder / "config.json"
    if not config_path.exists():
        raise AuditError(config_path, "missing: a transformers checkpoint folder needs config.json")
    config = load_config(config_path)
    missing: dict[str, str] = {}
    gen_path = folder / "generation_config.json"
    generation = load_generation_config(gen_path) if gen_path.exists() else None
    if generation is None:
        missing["generation_config"] = "no generation_config.json"

    tok_folder = existing_folder(Path(tokenizer_dir), "tokenizer folder") if tokenizer_dir else folder
    if tok_folder is not folder:
        check_tree(tok_folder, "tokenizer folder")
    tokenizer = tokenizer_facts
    if tokenizer is not None:
        pass
    elif has_tokenizer(tok_folder):
        tokenizer = load_tokenizer(tok_folder, config.model_type)
    elif tokenizer_dir:
        raise AuditError(tok_folder, "has no tokenizer files (tokenizer.json, vocab.txt, tokenizer.model, ...)")
    else:
        missing["tokenizer"] = f"no tokenizer files in {folder} (pass --tokenizer DIR)"

    tensors = tensors_from(folder)
    embeddings = None
    if tensors is None:
        missing["tensors"] = "no model.safetensors, sharded index or pytorch_model.bin"
    elif not tensors.tensors:
        missing["tensors"] = "the weight files could not be read safely"
    else:
        embeddings = find_embeddings(tensors, config)
        if embeddings.input is None:
            missing["input_embedding"] = "no tensor recognised as the input embeddings"
    return Facts(folder, config, generation, tokenizer, tensors, embeddings, missing, sentence_transformers=sentence)


class FolderSource(FactsSource):
    name = "folder"

    @classmethod
    def accepts(cls, target: object) -> bool:
        return isinstance(target, (str, os.PathLike))

    def refuse(self, options: AuditOptions, fixing: bool = False) -> None:
        if options.source is not None:
            raise SourceError(str(self.target), "--source HF_DIR applies to a GGUF target (check model.gguf "
                              "--source HF_DIR)")
        if options.base is not None:
            raise SourceError(self.path, "--base applies to a PEFT adapter folder (adapter_config.json) only")

    def gather(self, options: AuditOptions) -> Facts:
        folder = os.fspath(self.path or "")
        if options.tokenizer is None or options.tokenizer_path is not None:
            return gather(folder, options.tokenizer_path)
        from .memory import tokenizer_facts  # a live tokenizer beside a folder's model

        return gather(folder, tokenizer_facts=tokenizer_facts(options.tokenizer))


class ReadFolderSource(FolderSource):
    """A folder whose files were read already: ``--fix`` audits its input and its output (in its temporary
    folder) with the facts it read to plan and verify them. Never chosen from a target (not in ``SOURCES``)."""

    name = "read-folder"

    def __init__(self, target: object, facts: Facts) -> None:
        super().__init__(target)
        self.facts = facts

    @classmethod
    def accepts(cls, target: object) -> bool:
        return False

    def gather(self, options: AuditOptions) -> Facts:
        return self.facts
