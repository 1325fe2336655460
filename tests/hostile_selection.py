"""What is audited: the target's own files must not choose it (group "what is audited").

Each case is a checkpoint a gate once passed (exit 0) because a fact taken from the target steered the audit
away from what transformers or datasets load: a ``modules.json`` pointing at a clean module beside a broken
top-level checkpoint, a decoy tensor whose name ends like the input embedding, a README whose second config
holds the bad ids. Each must fail (exit 1)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from malformed import (
    CONFIG,
    HIDDEN,
    VOCAB,
    _config,
    _data,
    _jsonl,
    case,
    safetensors_bytes,
    write_json,
)

GROUP = "what is audited"


def _tied_with(folder: Path, tensors: dict[str, int], **config: Any) -> None:
    """A tied checkpoint whose model.safetensors holds ``tensors`` (name -> rows), ``HIDDEN`` wide."""
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, rows in tensors.items():
        size = rows * HIDDEN * 4
        header[name] = {"dtype": "F32", "shape": [rows, HIDDEN], "data_offsets": [offset, offset + size]}
        offset += size
    (folder / "model.safetensors").write_bytes(safetensors_bytes(header, bytes(offset)))
    _config(folder, tie_word_embeddings=True, **config)


@case(GROUP, exit_codes=(1,))
def st_modules_json_points_away_from_a_broken_top_level(folder: Path) -> None:
    """modules.json names a clean 0_Transformer; the top level, what AutoModel.from_pretrained(folder) loads,
    has 6 embedding rows for the 8 ids of its tokenizer."""
    module = folder / "0_Transformer"
    module.mkdir()
    for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"):
        shutil.copy(folder / name, module / name)
    write_json(folder / "modules.json", [{"idx": 0, "name": "0", "path": "0_Transformer",
                                          "type": "sentence_transformers.models.Transformer"}])
    _tied_with(folder, {"model.embed_tokens.weight": 6})


@case(GROUP, exit_codes=(1,))
def decoy_input_embedding_beside_a_short_one(folder: Path) -> None:
    """a.embed_tokens.weight has the 8 rows vocab_size and the tokenizer say; model.embed_tokens.weight, the
    matrix LlamaForCausalLM loads (the decoy is an unexpected key it drops), has 6."""
    _tied_with(folder, {"a.embed_tokens.weight": len(VOCAB), "model.embed_tokens.weight": 6})


@case(GROUP, exit_codes=(1,))
def decoy_input_embedding_of_an_unknown_architecture(folder: Path) -> None:
    """No class names the matrix: of the two tensors named like it, the 6-row one is the bound."""
    _tied_with(folder, {"a.embed_tokens.weight": len(VOCAB), "model.embed_tokens.weight": 6},
               model_type="mystery", architectures=["MysteryForCausalLM"])


@case(GROUP, exit_codes=(1,))
def dataset_second_config_holds_the_bad_ids(folder: Path) -> list[str]:
    """The README's default config is clean; load_dataset(folder) reads only it, the second config's ids pass
    the 8 rows."""
    data = _data(folder)
    for name, row in (("clean", {"text": "a b"}), ("bad", {"input_ids": [4, 5, 4000]})):
        (data / name).mkdir()
        _jsonl(data / name / "train.jsonl", [row])
    (data / "README.md").write_text("---\n" + json.dumps({"configs": [
        {"config_name": "clean", "default": True, "data_files": [{"split": "train", "path": "clean/train.jsonl"}]},
        {"config_name": "bad", "data_files": [{"split": "train", "path": "bad/train.jsonl"}]},
    ]}) + "\n---\n", encoding="utf-8")
    return [str(folder), "--dataset", str(data)]


assert CONFIG["vocab_size"] == len(VOCAB)  # the decoys are sized to agree with the config
