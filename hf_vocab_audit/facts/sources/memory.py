"""Facts from live objects: a transformers ``PreTrainedModel`` and tokenizer, as a training script holds them.

The same facts a folder gives, read from what transformers uses right now, without saving anything:
the config's JSON form, parameter names (the names ``save_pretrained`` writes) and shapes (``ds_shape``
under DeepSpeed ZeRO-3, where ``param.shape`` is a placeholder), the modules ``get_input_embeddings()``
and ``get_output_embeddings()`` return and whether they share one weight, ``generation_config``, and the
tokenizer's backend ``tokenizers`` object with its special tokens, chat template and limits. The objects
are read through their attributes; torch and transformers are imported only to name a transformers
model's tensors as it saves them (the caller has imported both already), never for a folder audit.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeGuard

from ...core.options import AuditOptions
from ...core.scope import Scope
from ...core.source import Source
from ...errors import AuditError
from ...io.safetensors_header import TensorInfo
from ..checkpoint import Facts
from ..config import ConfigFacts, GenerationFacts, parse_config, parse_generation_config
from ..embeddings import EmbeddingFacts, find_embeddings, vocab_biases
from ..tensors import _TORCH_TO_ST, CheckpointTensors
from ..tokenizer import ROLES, VERY_LARGE, TokenizerFacts, facts_of_backend, parse_max_length
from ..tree import existing_folder
from ..weight_formats.live import LiveTensors
from . import FactsSource, Repair, SourceError

MEMORY_FORMAT = LiveTensors.name  # CheckpointTensors.format of a live model
MODEL_FILE = "<model>"  # Location.file of a live model's tensors
TOKENIZER_FILE = "<tokenizer>"  # ... and of a live tokenizer's attributes
# Wrappers whose ``.module`` is the model (their parameter names carry a "module." prefix).
_WRAPPERS = ("DistributedDataParallel", "DataParallel", "DeepSpeedEngine", "PipelineEngine")


def is_path(value: object) -> TypeGuard[str | os.PathLike[str]]:
    """Whether ``value`` names a folder (rather than being a live object)."""
    return isinstance(value, (str, os.PathLike))


def model_label(model: object) -> str:
    """The report target of a live model: ``<in-memory LlamaForCausalLM>``."""
    return f"<in-memory {_class_name(unwrap(model))}>"


def _class_name(obj: object) -> str:
    # FSDP2 renames the class (FSDPLlamaForCausalLM); save_pretrained strips the prefix the same way.
    return type(obj).__name__.removeprefix("FSDP")


def unwrap(model: Any) -> Any:
    """The ``PreTrainedModel`` inside DDP/DeepSpeed engines, ``torch.compile`` and PEFT wrappers."""
    for _ in range(8):
        if hasattr(model, "_orig_mod"):  # torch.compile
            model = model._orig_mod
        elif type(model).__name__ in _WRAPPERS and hasattr(model, "module"):
            model = model.module
        elif type(model).__name__.startswith("Peft") and callable(getattr(model, "get_base_model", None)):
            model = model.get_base_model()
        else:
            break
    return model


def _json_form(obj: Any, what: str, label: str) -> dict[str, Any]:
    """What ``save_pretrained`` would write for a config object (all keys, not only the non-defaults)."""
    try:
        raw = json.loads(obj.to_json_string(use_diff=False))
    except Exception as exc:  # noqa: BLE001 - a config that cannot be serialised is bad input
        raise AuditError(label, f"its {what} cannot be read as JSON ({exc.__class__.__name__}: {exc})"[:400]) from None
    if not isinstance(raw, dict):
        raise AuditError(label, f"its {what} is not a JSON object")
    return raw


def _shape(tensor: Any) -> tuple[int, ...]:
    shape = getattr(tensor, "ds_shape", None)  # DeepSpeed ZeRO-3: the full shape of a partitioned parameter
    if shape is None:
        shape = tensor.shape
    return tuple(int(d) for d in shape)


def _dtype(tensor: Any) -> str:
    name = str(tensor.dtype).removeprefix("torch.")
    return _TORCH_TO_ST.get(name, name.upper())


def _named_tensors(model: Any) -> Iterator[tuple[str, Any]]:
    """Parameters (a shared one under its first name) and persistent buffers: the keys of the saved file."""
    yield from model.named_parameters()
    for prefix, module in model.named_modules():
        skip: set[str] = getattr(module, "_non_persistent_buffers_set", set())
        for name, buf in getattr(module, "_buffers", {}).items():
            if buf is not None and name not in skip:
                yield (f"{prefix}.{name}" if prefix else name), buf


def model_tensors(model: Any) -> tuple[CheckpointTensors, dict[int, str]]:
    """Every saved tensor's name, dtype and shape; and the saved name of each live tensor (by ``id``)."""
    live: dict[str, Any] = {}
    ignored = set(getattr(model, "_keys_to_ignore_on_save", None) or ())
    seen: set[int] = set()
    for name, tensor in _named_tensors(model):
        if name in live or id(tensor) in seen or name in ignored:
            continue
        live[name] = tensor
        seen.add(id(tensor))
    saved = _saved_names(model, live)
    table: dict[str, TensorInfo] = {}
    names: dict[int, str] = {}
    for name, (shape, dtype, tensor) in saved.items():
        table[name] = TensorInfo(name, dtype, shape, MODEL_FILE)
        if tensor is not None:
            names[id(tensor)] = name
    return CheckpointTensors(MEMORY_FORMAT, (), None, table), names


_Saved = dict[str, tuple[tuple[int, ...], str, Any]]  # saved name -> (shape, dtype, the live tensor or None)


def _saved_names(model: Any, live: dict[str, Any]) -> _Saved:
    """The names and shapes ``save_pretrained`` writes: transformers 5 reverts its load-time weight
    conversions on save (Llava's ``model.language_model.*`` is saved as ``language_model.model.*``, fused
    MoE experts are split again). The revert runs on meta-device stand-ins, so no memory is touched;
    without transformers' conversion code, the live names stand.
    """
    plain: _Saved = {name: (_shape(t), _dtype(t), t) for name, t in live.items()}
    if not type(model).__module__.startswith("transformers."):
        return plain
    try:
        import torch
        from transformers.core_model_loading import revert_weight_conversion
    except ImportError:
        return plain
    stand_ins = {name: torch.empty(shape, dtype=live[name].dtype, device="meta") for name, (shape, _d, _t) in
                 plain.items()}
    origin = {id(t): name for name, t in stand_ins.items()}
    try:
        reverted = revert_weight_conversion(model, dict(stand_ins))
    except Exception:  # noqa: BLE001 - transformers internals: keep the live names rather than fail the audit
        return plain
    out: _Saved = {}
    for name, t in reverted.items():
        source = origin.get(id(t))
        out[name] = (tuple(int(d) for d in t.shape), _dtype(t), live[source] if source else None)
    return out


def _module_weight(model: Any, getter: str) -> Any:
    try:
        module = getattr(model, getter)()
    except (AttributeError, NotImplementedError):
        return None
    return getattr(module, "weight", None)


def model_embeddings(model: Any, tensors: CheckpointTensors, names: dict[int, str],
                     config: ConfigFacts) -> EmbeddingFacts:
    """Embedding facts with input, output and tying taken from the modules transformers actually uses.

    Position, token-type and classifier tensors are found by name, as for a folder; a model whose
    ``get_input_embeddings()`` is not implemented falls back to names too.
    """
    by_name = find_embeddings(tensors, config)
    inp_weight = _module_weight(model, "get_input_embeddings")
    inp = tensors.get(names.get(id(inp_weight))) if inp_weight is not None else None
    if inp is None:
        return by_name
    out_weight = _module_weight(model, "get_output_embeddings")
    if out_weight is None:
        out, tied = None, by_name.tied  # no output projection: tying is what the config says
    elif out_weight is inp_weight:
        out, tied = None, True
    else:
        out, tied = tensors.get(names.get(id(out_weight))), False
    return dataclasses.replace(by_name, input=inp, output=out, tied=tied,
                               vocab_sized=vocab_biases(tensors.tensors, inp.rows))


def model_facts(model: Any) -> tuple[ConfigFacts, GenerationFacts | None, CheckpointTensors, EmbeddingFacts]:
    """Config, generation config, tensors and embeddings of a live ``PreTrainedModel``."""
    model = unwrap(model)
    label = model_label(model)
    config_obj = getattr(model, "config", None)
    if config_obj is None or not hasattr(config_obj, "to_json_string") or not hasattr(model, "named_parameters"):
        raise AuditError(label, "is not a transformers PreTrainedModel (it needs .config and named_parameters())")
    raw = _json_form(config_obj, "config", label)
    raw["architectures"] = [_class_name(model)]  # save_pretrained records the live class the same way
    config = parse_config(raw, Path(f"{label}.config"))
    generation = None
    gen_obj = getattr(model, "generation_config", None)
    can_generate = getattr(model, "can_generate", None)
    if gen_obj is not None and callable(can_generate) and can_generate():
        generation = parse_generation_config(_json_form(gen_obj, "generation_config", label),
                                             Path(f"{label}.generation_config"))
    tensors, names = model_tensors(model)
    return config, generation, tensors, model_embeddings(model, tensors, names, config)


def tokenizer_facts(tokenizer: Any) -> TokenizerFacts:
    """Facts of a live tokenizer (``PreTrainedTokenizerBase`` with a ``tokenizers`` backend, a processor
    holding one, as multimodal models have, or a bare ``tokenizers.Tokenizer``).

    The backend is copied first: the audit resets truncation and padding to encode, and the caller's
    tokenizer must not change.
    """
    processor_template = None
    if getattr(tokenizer, "backend_tokenizer", None) is None and getattr(tokenizer, "tokenizer", None) is not None:
        processor_template = getattr(tokenizer, "chat_template", None)  # a processor saves its own template
        tokenizer = tokenizer.tokenizer
    backend = getattr(tokenizer, "backend_tokenizer", None) or getattr(tokenizer, "_tokenizer", None)
    if backend is None and hasattr(tokenizer, "to_str") and hasattr(tokenizer, "get_added_tokens_decoder"):
        backend = tokenizer  # a bare tokenizers.Tokenizer: ids and added tokens, no special-token roles
    label = f"<in-memory {type(tokenizer).__name__}>"
    if backend is None or not hasattr(backend, "to_str"):
        raise AuditError(label, "has no `tokenizers` backend (backend_tokenizer) to audit; pass a fast tokenizer")
    from tokenizers import Tokenizer

    copy = Tokenizer.from_str(backend.to_str())
    specials = getattr(tokenizer, "special_tokens_map", None) or {}
    named = {role: str(specials[f"{role}_token"]) for role in ROLES if specials.get(f"{role}_token")}
    extra_obj = getattr(tokenizer, "extra_special_tokens", None) or []
    # Ordered and deduplicated in linear time, like the folder path (facts/tokenizer/__init__.py).
    extra = list(dict.fromkeys(str(t) for t in (extra_obj.values() if isinstance(extra_obj, dict) else extra_obj)))
    # A role set after construction (tokenizer.pad_token = "<pad>") to a string the vocabulary lacks encodes
    # as unk now, and is added at the next id when the saved tokenizer is loaded: audit what will be loaded.
    # One batch: adding them one call at a time is quadratic in the number of added tokens.
    from tokenizers import AddedToken

    added = {t.content for t in copy.get_added_tokens_decoder().values()}
    missing = [c for c in dict.fromkeys([*named.values(), *extra]) if c not in added]
    if missing:
        copy.add_tokens([AddedToken(c, special=True, normalized=False) for c in missing])
    max_length = getattr(tokenizer, "model_max_length", None)
    if isinstance(max_length, (int, float)) and not isinstance(max_length, bool) and max_length >= VERY_LARGE:
        max_length = None
    template = processor_template or getattr(tokenizer, "chat_template", None)
    if isinstance(template, dict):  # several named templates: "default" is the one apply_chat_template uses
        template = template.get("default") or next(iter(template.values()), None)
    template = template if isinstance(template, str) else None
    auto_map = getattr(tokenizer, "_auto_map", None) or (getattr(tokenizer, "init_kwargs", None) or {}).get("auto_map")
    names = getattr(tokenizer, "model_input_names", None) or ["input_ids", "attention_mask"]
    return facts_of_backend(
        folder=Path(TOKENIZER_FILE),
        source="tokenizers",
        files=(),
        backend=copy,
        named=named,
        extra=extra,
        model_max_length=parse_max_length(Path(f"{label}.model_max_length"), max_length),
        template=template,
        template_file=f"{TOKENIZER_FILE}.chat_template" if template else None,
        tokenizer_class=type(tokenizer).__name__,
        names=tuple(str(n) for n in names),
        conflicts=(),  # one live backend: its added tokens cannot disagree with another file
        auto_map=auto_map if isinstance(auto_map, dict) else None,
    )


def facts_from_memory(model: object, tokenizer: str | Path | object | None = None) -> Facts:
    """The facts of a live ``PreTrainedModel`` and tokenizer (an object, or a tokenizer folder), unsaved.

    ``model_dir`` is the label ``<in-memory LlamaForCausalLM>``; tensors have format ``"memory"``.
    """
    from ..tokenizer.folder import load_tokenizer
    from ..tree import check_tree

    config, generation, tensors, embeddings = model_facts(model)
    missing: dict[str, str] = {}
    if generation is None:
        missing["generation_config"] = "the model has no generation_config (it cannot generate)"
    tok: TokenizerFacts | None = None
    if tokenizer is None:
        missing["tokenizer"] = "no tokenizer was passed (audit(model=..., tokenizer=...))"
    elif is_path(tokenizer):
        folder = existing_folder(Path(tokenizer), "tokenizer folder")
        check_tree(folder, "tokenizer folder")
        tok = load_tokenizer(folder, config.model_type)
    else:
        tok = tokenizer_facts(tokenizer)
    if not tensors.tensors:
        missing["tensors"] = "the model has no parameters"
    elif embeddings.input is None:
        missing["input_embedding"] = "no module recognised as the input embeddings"
    return Facts(Path(model_label(model)), config, generation, tok, tensors, embeddings, missing)


class MemorySource(FactsSource):
    name = "memory"
    origin = Source.MEMORY
    lines = False  # objects, not files
    cannot = {Scope.WEIGHTS: LiveTensors.no_rows}
    repair = Repair.REFUSED  # audit() never fixes; the gate takes paths only

    @classmethod
    def accepts(cls, target: object) -> bool:
        return target is not None and not isinstance(target, (str, os.PathLike))

    def refuse(self, options: AuditOptions, fixing: bool = False) -> None:
        if options.base is not None:
            raise SourceError(None, "--base applies to a checkpoint folder or a PEFT adapter folder, not live objects")

    def gather(self, options: AuditOptions) -> Facts:
        return facts_from_memory(self.target, options.tokenizer)

    @property
    def label(self) -> str:
        return model_label(self.target)
