"""A PEFT adapter folder (``adapter_config.json``): its base, the embedding / lm_head rows it saves, its
trainable token indices and its own tokenizer. Read like a checkpoint: safetensors headers, ``.bin`` only
through ``torch.load(weights_only=True)``; nothing from the folder is executed.

What peft 0.21 saves, measured: after ``resize_token_embeddings`` it saves the whole embedding and lm_head
(``base_model.model.model.embed_tokens.weight``) automatically; ``modules_to_save`` adds
``...modules_to_save.weight`` copies; ``trainable_token_indices`` saves a ``trainable_tokens_delta`` and the
resized base layer.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import AuditError, import_torch
from ...io.jsonfile import check_inside, read_json_object
from ...io.safetensors_header import TensorInfo, read_header
from ...io.stand_in import refuse_stand_in
from ..embeddings import INPUT_SUFFIXES, OUTPUT_SUFFIXES, has_suffix
from ..tensors import RefusedFile
from ..tokenizer import TokenizerFacts
from ..tokenizer.folder import has_tokenizer, load_tokenizer
from ..tree import check_tree

ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_WEIGHTS = ("adapter_model.safetensors", "adapter_model.bin")


@dataclass(frozen=True)
class AdapterFacts:
    folder: Path
    base_ref: str | None  # base_model_name_or_path
    peft_type: str | None
    modules_to_save: tuple[str, ...]
    trainable_token_indices: tuple[int, ...]
    weights_file: str | None
    tensors: dict[str, TensorInfo]
    refused: tuple[RefusedFile, ...]
    saved_input: TensorInfo | None  # a whole input-embedding matrix saved in the adapter
    saved_output: TensorInfo | None  # a whole lm_head saved in the adapter
    tokenizer: TokenizerFacts | None
    # What training changes besides the adapter's own factors (facts.trainable_rows reads them):
    target_modules: tuple[str, ...] = ()  # LoRA's modules, as a list of names
    target_pattern: str | None = None  # LoRA's modules, as one regular expression (never executed here)
    # trainable_token_indices per module name; None names the input embeddings (the config's plain list)
    token_indices_by_module: tuple[tuple[str | None, tuple[int, ...]], ...] = ()

    def summary(self, base_dir: Path) -> dict[str, object]:
        """The adapter's facts for the report (the other facts are the base's)."""
        saved = self.saved_input or self.saved_output
        return {
            "folder": str(self.folder),
            "base": str(base_dir),
            "peft_type": self.peft_type,
            "saved_embedding": {"name": saved.name, "rows": saved.rows, "file": saved.file} if saved else None,
            "modules_to_save": list(self.modules_to_save),
            "trainable_token_indices": list(self.trainable_token_indices),
            "tokenizer_length": self.tokenizer.length if self.tokenizer else None,
        }

    @property
    def saved_rows(self) -> int | None:
        return self.saved_input.rows if self.saved_input else self.saved_output.rows if self.saved_output else None


MODEL_WEIGHTS = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json")


def is_adapter(folder: Path) -> bool:
    """An adapter folder: ``adapter_config.json`` and no model of its own (some adapters also save config.json)."""
    if not (folder / ADAPTER_CONFIG).is_file():
        return False
    return not (folder / "config.json").exists() or not any((folder / n).exists() for n in MODEL_WEIGHTS)


def _strings(path: Path, key: str, value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise AuditError(path, f'"{key}" must be a list of module names, not {value!r}'[:300])
    return tuple(value)


def _indices(path: Path, value: Any) -> tuple[int, ...]:
    """``trainable_token_indices``: a list of ids, or {module name: [ids]}."""
    if value is None:
        return ()
    lists = value.values() if isinstance(value, dict) else [value]
    out: list[int] = []
    for ids in lists:
        if not isinstance(ids, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
            raise AuditError(path, f'"trainable_token_indices" must hold lists of token ids, not {value!r}'[:300])
        out.extend(ids)
    return tuple(sorted(set(out)))


def _indices_by_module(value: Any) -> tuple[tuple[str | None, tuple[int, ...]], ...]:
    """``trainable_token_indices`` per module (already checked by :func:`_indices`): a plain list is peft's
    input embeddings (``_get_input_embeddings_name``), a dict names its modules."""
    if value is None:
        return ()
    if isinstance(value, dict):
        return tuple((str(name), tuple(sorted(set(ids)))) for name, ids in sorted(value.items(), key=str))
    return ((None, tuple(sorted(set(value)))),)


def _bin_tensors(path: Path, name: str) -> tuple[dict[str, TensorInfo], tuple[RefusedFile, ...]]:
    import pickle

    refuse_stand_in(path, binary=True)  # an LFS pointer is not an "unsafe pickle"
    torch = import_torch(path, "reading a PyTorch .bin adapter")
    try:
        state = torch.load(path, map_location="meta", weights_only=True)
    except pickle.UnpicklingError as exc:
        return {}, (RefusedFile(name, f"torch.load(weights_only=True) refused it: {str(exc).splitlines()[0]}"[:300]),)
    except Exception as exc:  # noqa: BLE001 - any failure of an untrusted file is bad input
        raise AuditError(path, f"is not a readable PyTorch weights file ({exc.__class__.__name__})") from None
    if not isinstance(state, dict):
        raise AuditError(path, f"holds a {type(state).__name__}, not a state dict of tensors")
    tensors = {k: TensorInfo(k, str(v.dtype).removeprefix("torch.").upper(), tuple(v.shape), name)
               for k, v in state.items() if isinstance(k, str) and isinstance(v, torch.Tensor)}
    return tensors, ()


def _whole(tensors: dict[str, TensorInfo], suffixes: tuple[str, ...]) -> TensorInfo | None:
    """A whole matrix saved for the base (not a modules_to_save copy, a LoRA factor or a token delta)."""
    found = [t for name, t in sorted(tensors.items())
             if len(t.shape) == 2 and has_suffix(name, suffixes)
             and not any(p in name for p in ("lora_", "original_module", "trainable_tokens_delta"))]
    return found[0] if found else None


def load_adapter(folder: Path) -> AdapterFacts:
    check_tree(folder, "adapter folder")  # a FIFO adapter_model.bin would block torch.load forever
    path = folder / ADAPTER_CONFIG
    check_inside(path, folder)
    raw = read_json_object(path)
    base = raw.get("base_model_name_or_path")
    if base is not None and not isinstance(base, str):
        raise AuditError(path, '"base_model_name_or_path" must be a string')
    tensors: dict[str, TensorInfo] = {}
    refused: tuple[RefusedFile, ...] = ()
    weights_file = next((n for n in ADAPTER_WEIGHTS if (folder / n).is_file()), None)
    if weights_file is not None:
        wpath = folder / weights_file
        check_inside(wpath, folder)
        if weights_file.endswith(".safetensors"):
            tensors = {t.name: t for t in read_header(wpath, weights_file).tensors}
        else:
            tensors, refused = _bin_tensors(wpath, weights_file)
    peft_type = raw.get("peft_type")
    targets = raw.get("target_modules")
    indices = raw.get("trainable_token_indices")
    return AdapterFacts(
        folder=folder,
        base_ref=base or None,
        peft_type=peft_type if isinstance(peft_type, str) else None,
        modules_to_save=_strings(path, "modules_to_save", raw.get("modules_to_save")),
        trainable_token_indices=_indices(path, indices),
        weights_file=weights_file,
        tensors=tensors,
        refused=refused,
        saved_input=_whole(tensors, INPUT_SUFFIXES + ("token_adapter.base_layer.weight",)),
        saved_output=_whole(tensors, OUTPUT_SUFFIXES),
        tokenizer=load_tokenizer(folder) if has_tokenizer(folder) else None,
        target_modules=tuple(t for t in targets if isinstance(t, str)) if isinstance(targets, list) else (),
        target_pattern=targets if isinstance(targets, str) else None,
        token_indices_by_module=_indices_by_module(indices),
    )
