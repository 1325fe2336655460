"""The folder source: the facts of a local checkpoint folder (and a separate tokenizer folder).

The Hub source (:mod:`.hub`) checks a commit's small files out into a folder and supplies the tensor
headers it read remotely; a source of objects in memory builds the same :class:`Facts` from live objects.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from pathlib import Path

from ...core.findings import Finding
from ...core.options import AuditOptions
from ...errors import AuditError
from ..checkpoint import Facts
from ..config import load_config, load_generation_config
from ..embeddings import find_embeddings
from ..sentence_transformers import SentenceTransformerFacts, sentence_transformer
from ..tensors import CheckpointTensors
from ..tokenizer import TokenizerFacts
from ..tokenizer.folder import has_tokenizer, load_tokenizer
from ..tree import check_tree, existing_folder
from ..weight_formats.registry import load_tensors
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

    A sentence-transformers folder whose Transformer module is a sub-folder loads two ways: sentence-transformers
    reads the module, ``AutoModel.from_pretrained(folder)`` the top-level checkpoint. ``modules.json`` is the
    target's word, so it chooses nothing: when the top level is a checkpoint too (config.json and weights),
    it is gathered as one more entry point (``Facts.entry_points``) and audited with the same rules.
    """
    folder = existing_folder(Path(model_dir), "model folder")
    check_tree(folder)  # links and devices at any depth, before anything below opens a file
    module, sentence = sentence_transformer(folder)  # modules.json: the checkpoint sentence-transformers loads
    tok_folder = existing_folder(Path(tokenizer_dir), "tokenizer folder") if tokenizer_dir else None
    if tok_folder is not None and tok_folder != folder:
        check_tree(tok_folder, "tokenizer folder")
    facts = _checkpoint(module, tok_folder, tensors_from, tokenizer_facts, sentence)
    if module == folder or not (folder / "config.json").is_file() or tensors_from is not load_tensors:
        return facts  # one entry point (the Hub source reads one folder's headers)
    top_tensors = load_tensors(folder)
    if top_tensors is None:
        return facts  # config.json alone: AutoModel finds no weights there, nothing loads
    # The top level with its own tokenizer when it has one (AutoTokenizer.from_pretrained(folder)), else the
    # one the module ships (or the one the operator named): the ids that reach the top-level model.
    own = tok_folder is None and tokenizer_facts is None and has_tokenizer(folder)
    top = _checkpoint(folder, tok_folder, lambda _f: top_tensors, None if own else facts.tokenizer, None)
    return dataclasses.replace(facts, entry_points=(top,))


def _checkpoint(
    folder: Path,
    tok_folder: Path | None,
    tensors_from: Callable[[Path], CheckpointTensors | None],
    tokenizer_facts: TokenizerFacts | None,
    sentence: SentenceTransformerFacts | None,
) -> Facts:
    """The facts of the one checkpoint in ``folder`` (config, generation config, tokenizer, tensors)."""
    config_path = folder / "config.json"
    if not config_path.exists():
        raise AuditError(config_path, "missing: a transformers checkpoint folder needs config.json")
    config = load_config(config_path)
    missing: dict[str, str] = {}
    gen_path = folder / "generation_config.json"
    generation = load_generation_config(gen_path) if gen_path.exists() else None
    if generation is None:
        missing["generation_config"] = "no generation_config.json"

    tokenizer = tokenizer_facts
    if tokenizer is not None:
        pass
    elif has_tokenizer(tok_folder or folder):
        tokenizer = load_tokenizer(tok_folder or folder, config.model_type)
    elif tok_folder is not None:
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
        if embeddings.input is None and not embeddings.ctc_head:  # a CTC head is the vocabulary, no gap
            missing["input_embedding"] = "no tensor recognised as the input embeddings"
    return Facts(folder, config, generation, tokenizer, tensors, embeddings, missing, sentence_transformers=sentence)


def entry_point_findings(facts: Facts, target: Path, findings: list[Finding]) -> list[Finding]:
    """Name each finding's file from the target folder, so it says which entry point it is in
    (``0_Transformer/config.json`` for the sentence-transformers module, ``config.json`` for the top level)."""
    if facts.model_dir == target or not facts.model_dir.is_relative_to(target):
        return findings
    sub = facts.model_dir.relative_to(target)
    return [dataclasses.replace(f, location=dataclasses.replace(f.location, file=(sub / f.location.file).as_posix()))
            if f.location.file else f for f in findings]


class FolderSource(FactsSource):
    name = "folder"

    @classmethod
    def accepts(cls, target: object) -> bool:
        return isinstance(target, (str, os.PathLike))

    def refuse(self, options: AuditOptions, fixing: bool = False) -> None:
        if options.source is not None:
            raise SourceError(str(self.target), "--source HF_DIR applies to a GGUF target (check model.gguf "
                              "--source HF_DIR)")

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
