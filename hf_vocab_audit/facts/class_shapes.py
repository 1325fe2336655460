"""What transformers' own model classes build that a checkpoint's header does not say, derived once from the
installed transformers and stored as data (``data/class_shapes.json``), so the static check never imports it.

Three facts, each read from the class the config names, never from a list of family names:

- ``input_rows``: classes whose input embedding has rows beyond ``vocab_size`` by design (CPM-Ant's prompt
  rows: ``vocab_size + prompt_types * prompt_length``; Molmo2's ``additional_vocab_size``), with the config
  keys the extra rows depend on and their defaults. Those rows are what ``from_pretrained`` expects.
- ``position_tables``: tensors of rows sized by a config key (``n_positions``, ``max_position_embeddings``)
  that the saved checkpoint may not hold: fixed sinusoidal buffers (GPT-J and CodeGen's
  ``embed_positions``, CTRL's ``pos_encoding``, TIPSv2's text tower), tables a head class drops on save
  (Marian's sinusoidal ``embed_positions``). A position past them fails the forward, so when the checkpoint
  stores no position table the config key is the bound.
- ``input_pieces``: a vocabulary matrix a checkpoint stores in pieces that transformers' conversion mapping
  concatenates at load (Molmo2's ``wte.embedding`` + ``wte.new_embedding`` into ``embed_tokens``).
- ``embedding_names``: the parameter names of the input embedding (``get_input_embeddings()``) in the base class
  and its language-model head classes (``embed_tokens.weight``, ``model.embed_tokens.weight``), and of each head
  class's output embedding (``get_output_embeddings()``: ``LlamaForCausalLM`` -> ``lm_head.weight``). The
  tensor transformers loads into the matrix is the one of that name: a decoy whose name merely ends the same
  way (``a.embed_tokens.weight``) is an unexpected key ``from_pretrained`` drops, never the matrix audited.

``generate()`` builds every text model type's base class on the meta device (no weights, no remote code:
only classes transformers ships) and reads its modules; ``python scripts/regenerate.py`` stores it and
``tests/facts/test_class_shapes.py`` regenerates a sample to catch a stale table. A config whose keys the
extra rows depend on differ from the defaults is built on the meta device at audit time
(:func:`extra_input_rows`); without torch that answer is None (cannot decide), and the caller keeps its
header-only verdict.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..errors import MissingExtra, import_torch
from .config import ConfigFacts

TABLE_PATH = Path(__file__).resolve().parent.parent / "data" / "class_shapes.json"
POSITION_KEYS = ("max_position_embeddings", "n_positions", "n_ctx", "max_positions")
# Layer counts shrunk to 1 while deriving: the embeddings and position buffers do not depend on depth, and a
# one-layer skeleton builds in a fraction of the time.
LAYER_KEYS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers", "encoder_layers", "decoder_layers",
              "num_decoder_layers")
MAX_BUILD_INT = 1 << 24  # a config value past this is not built at audit time (cannot decide instead)
SENTINEL = 1009  # a position count no other dimension of a default config has (prime, odd)


@lru_cache(maxsize=1)
def tables() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(TABLE_PATH.read_text(encoding="utf-8"))
    return data


@dataclass(frozen=True)
class EmbeddingNames:
    """The names a model type's classes give their input embedding, and each head class its output one."""

    inputs: tuple[str, ...]
    outputs: dict[str, str]  # head class name (config.architectures) -> its output embedding's name


def embedding_names(model_type: str | None) -> EmbeddingNames | None:
    """The embedding parameter names of ``model_type``'s classes, or None for a type not in the table."""
    entry = tables().get("embedding_names", {}).get(model_type or "")
    if entry is None:
        return None
    return EmbeddingNames(tuple(entry["input"]), dict(entry["output"]))


def input_pieces() -> list[tuple[tuple[str, ...], str]]:
    """(the pieces' names, the matrix they make) for every concatenation of an input vocabulary matrix."""
    return [(tuple(p["sources"]), p["target"]) for p in tables()["input_pieces"].values()]


def position_table(config: ConfigFacts) -> tuple[int, str] | None:
    """(rows, why) of a position table sized by a config key that this config's class builds, or None."""
    entry = tables()["position_tables"].get(config.model_type or "")
    if entry is None:
        return None
    text = config.text
    if any(text.get(k, v) != v for k, v in entry["when"].items()):
        return None  # a switch the class builds the table under is off: no such table
    value = text.get(entry["key"])
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        return None
    return value, f"{entry['tensor']} has {entry['key']} ({value}) rows"


def runs_past_table(config: ConfigFacts) -> str | None:
    """Why this config's class runs sequences past its position table (positions clamped, as TAPAS does per
    table cell), or None: derived by running the class past its table with the config's switches."""
    entry = tables()["position_tables"].get(config.model_type or "")
    past = entry.get("runs_past") if entry else None
    if past is None:
        return None
    text = config.text
    if any(text.get(k, v) != v for k, v in past["when"].items()):
        return None
    switches = ", ".join(f"{k}={json.dumps(v)}" for k, v in past["when"].items())
    return "a sequence past the position table runs" + (f" with {switches}" if switches else "")


def extra_input_rows(config: ConfigFacts) -> int | None:
    """Rows the config's class builds in its input embedding beyond ``vocab_size``: 0 for most classes;
    None when it cannot be decided (the extra rows depend on keys set away from the defaults and the class
    cannot be built on the meta device here, e.g. without torch)."""
    entry = tables()["input_rows"].get(config.model_type or "")
    if entry is None:
        return 0
    text = config.text
    if all(text.get(k, v) == v for k, v in entry["keys"].items()):
        return int(entry["extra"])
    return _meta_extra_rows(config)


def extra_rows_keys(config: ConfigFacts) -> list[str]:
    """The config keys the extra input rows of this config's class depend on."""
    entry = tables()["input_rows"].get(config.model_type or "")
    return sorted(entry["keys"]) if entry else []


_BUILT: dict[str, int | None] = {}  # config text -> extra rows, one meta build per config and process


def _meta_extra_rows(config: ConfigFacts) -> int | None:
    """The input rows minus vocab_size of the config's class built on the meta device (no weights, no
    remote code), or None when torch or the class is not at hand."""
    key = json.dumps([config.model_type, config.text], sort_keys=True, default=str)
    if key not in _BUILT:
        _BUILT[key] = _meta_extra_rows_uncached(config)
    return _BUILT[key]


def _meta_extra_rows_uncached(config: ConfigFacts) -> int | None:
    mtype = config.model_type or ""
    allowed = {k: v for k, v in config.text.items() if k not in ("auto_map", "architectures")}
    if any(isinstance(v, int) and not isinstance(v, bool) and v > MAX_BUILD_INT and k != "vocab_size"
           for k, v in allowed.items()):
        return None  # untrusted sizes: a skeleton of millions of modules is not built
    try:
        import_torch(config.path, f"deriving the input rows of {mtype}")
        import transformers
        from transformers import CONFIG_MAPPING
        from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES
    except (MissingExtra, ImportError):
        return None
    if mtype not in CONFIG_MAPPING or mtype not in MODEL_MAPPING_NAMES:
        return None
    try:
        cfg = CONFIG_MAPPING[mtype](**{**allowed, **dict.fromkeys(_present(allowed, LAYER_KEYS), 1)})
        rows = _meta_input_rows(getattr(transformers, str(MODEL_MAPPING_NAMES[mtype])), cfg)
    except Exception:  # noqa: BLE001 - any failure to build means "cannot decide"
        return None
    return None if rows is None else rows - int(cfg.vocab_size)


def _present(d: dict[str, Any], keys: tuple[str, ...]) -> list[str]:
    return [k for k in keys if isinstance(d.get(k), int) and not isinstance(d.get(k), bool)]


def _meta_model(model_cls: Any, cfg: Any) -> Any:
    import torch

    with torch.device("meta"):
        return model_cls(cfg)


def _meta_input_rows(model_cls: Any, cfg: Any) -> int | None:
    emb = _meta_model(model_cls, cfg).get_input_embeddings()
    weight = getattr(emb, "weight", None)
    return int(weight.shape[0]) if weight is not None and weight.dim() == 2 else None


def _int_keys(d: dict[str, Any]) -> list[str]:
    return [k for k, v in d.items() if isinstance(v, int) and not isinstance(v, bool)]


def _one(mtype: str, cfg_cls: Any, model_cls: Any
         ) -> tuple[dict[str, Any] | None, dict[str, Any] | None, dict[str, Any] | None]:
    """(input_rows entry, position_tables entry, embedding_names entry) of one model type's base class (and its
    language-model head classes), built on the meta device."""
    default = cfg_cls().to_dict()
    shrink = dict.fromkeys(_present(default, LAYER_KEYS), 1)
    sentinels = {k: SENTINEL + 2 * i for i, k in enumerate(_present(default, POSITION_KEYS))}
    try:
        model = _meta_model(model_cls, cfg_cls(**shrink, **sentinels))
    except Exception:  # noqa: BLE001 - a config that refuses one layer: build it with its own depth
        shrink = {}
        model = _meta_model(model_cls, cfg_cls(**sentinels))
    rows_entry = None
    weight = getattr(model.get_input_embeddings(), "weight", None)
    vocab = default["vocab_size"]
    if weight is not None and weight.dim() == 2 and isinstance(vocab, int) and int(weight.shape[0]) != vocab:
        extra = int(weight.shape[0]) - vocab
        keys = {}
        for key in _int_keys(default):  # the keys the extra rows depend on: change one, rebuild, compare
            if key in ("vocab_size", *LAYER_KEYS, *POSITION_KEYS) or key.endswith("_token_id"):
                continue
            try:
                rows = _meta_input_rows(model_cls, cfg_cls(**shrink, **sentinels, **{key: default[key] + 1}))
            except Exception:  # noqa: BLE001,S112 - a value the config refuses: the rows do not hang on it here
                continue
            if rows is not None and rows - vocab != extra:
                keys[key] = default[key]
        rows_entry = {"extra": extra, "keys": keys}
    position_entry = None
    by_rows = {v: k for k, v in sentinels.items()}
    for name, t in sorted([*model.named_parameters(), *model.named_buffers()]):
        shape = tuple(int(s) for s in t.shape)
        if len(shape) == 2 and shape[0] in by_rows and shape[1] not in by_rows:
            position_entry = {"key": by_rows[shape[0]], "tensor": name, "when": {}}
            break
    if position_entry is not None:  # the switches the table hangs on (DeBERTa-v2's position_biased_input)
        for key, value in sorted(default.items()):
            if not isinstance(value, bool):
                continue
            try:
                other = _meta_model(model_cls, cfg_cls(**shrink, **sentinels, **{key: not value}))
            except Exception:  # noqa: BLE001,S112 - a value the config refuses
                continue
            named = dict([*other.named_parameters(), *other.named_buffers()])
            if position_entry["tensor"] not in named:
                position_entry["when"][key] = value
    if position_entry is not None:
        clamped = _runs_past(cfg_cls, model_cls, shrink, position_entry["key"], default)
        if clamped is not None:
            position_entry["runs_past"] = clamped
    return rows_entry, position_entry, _names(mtype, model, cfg_cls(**shrink, **sentinels))


def _param_name(model: Any, module: Any) -> str | None:
    """The name ``model`` gives the 2-D weight of ``module`` (one of its modules), or None."""
    weight = getattr(module, "weight", None)
    if module is None or weight is None or weight.dim() != 2:
        return None
    for name, mod in model.named_modules():
        if mod is module:
            return f"{name}.weight" if name else "weight"
    return None


def _names(mtype: str, base: Any, cfg: Any) -> dict[str, Any] | None:
    """The input embedding's name in the base class and its language-model head classes, and each head class's
    output embedding name: read from the classes built on the meta device, never written by hand."""
    import transformers
    from transformers.models.auto import modeling_auto

    first = _param_name(base, base.get_input_embeddings())
    if first is None:
        return None
    inputs, outputs = {first}, {}
    for mapping in HEAD_MAPPINGS:
        head_name = getattr(modeling_auto, mapping).get(mtype)
        head_cls = getattr(transformers, str(head_name), None) if head_name else None
        if head_cls is None or head_name in outputs:
            continue
        try:
            head = _meta_model(head_cls, cfg)
        except Exception:  # noqa: BLE001,S112 - a head that cannot be built from this config
            continue
        name = _param_name(head, head.get_input_embeddings())
        if name is not None:
            inputs.add(name)
        out = _param_name(head, head.get_output_embeddings())
        if out is not None:
            outputs[str(head_name)] = out
    return {"input": sorted(inputs), "output": dict(sorted(outputs.items()))}


# The head classes whose input and output embedding names are read (the classes a vocabulary reaches).
HEAD_MAPPINGS = ("MODEL_FOR_CAUSAL_LM_MAPPING_NAMES", "MODEL_FOR_MASKED_LM_MAPPING_NAMES",
                 "MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES", "MODEL_FOR_PRETRAINING_MAPPING_NAMES")


RUN_POSITIONS = 16  # the table a run past it is tried on (a tiny model on CPU)


def _forward_past(cfg_cls: Any, model_cls: Any, params: dict[str, Any]) -> bool:
    """Whether a tiny model of the class runs a sequence 8 tokens past its position table (on CPU)."""
    import torch

    torch.manual_seed(0)
    model = model_cls(cfg_cls(**params)).eval()
    ids = torch.full((1, RUN_POSITIONS + 8), 5)
    kwargs: dict[str, Any] = {"input_ids": ids}
    if getattr(model.config, "is_encoder_decoder", False):
        kwargs["decoder_input_ids"] = ids
    try:
        with torch.no_grad():
            model(**kwargs)
    except Exception:  # noqa: BLE001 - any failure is the bound holding
        return False
    return True


def _runs_past(cfg_cls: Any, model_cls: Any, shrink: dict[str, int], key: str,
               default: dict[str, Any]) -> dict[str, Any] | None:
    """None when a sequence past the table fails the forward (the table is the bound), else the switches that
    keep it running (TAPAS's reset_position_index_per_cell clamps positions per cell): ``{"when": {...}}``.
    Decided by running a tiny model of the class, as transformers runs it, never from its name."""
    small = {k: v for k, v in (("hidden_size", 32), ("intermediate_size", 64), ("num_attention_heads", 4),
                               ("d_model", 32), ("n_embd", 32), ("vocab_size", 64)) if k in default}
    params = {**shrink, **small, key: RUN_POSITIONS}
    try:
        if not _forward_past(cfg_cls, model_cls, params):
            return None
    except Exception:  # noqa: BLE001 - a class that cannot be built small here: the table is the bound
        return None
    when = {}
    for switch, value in sorted(default.items()):
        if isinstance(value, bool):
            try:
                if not _forward_past(cfg_cls, model_cls, {**params, switch: not value}):
                    when[switch] = value
            except Exception:  # noqa: BLE001,S112 - a value the config or class refuses
                continue
    return {"when": when}


def generate(only: set[str] | None = None) -> dict[str, Any]:
    """Derive the tables from the installed transformers (imports torch; about a minute, run offline);
    ``only``: these model types (a test regenerates a sample)."""
    import warnings

    import transformers
    from transformers import CONFIG_MAPPING
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    transformers.logging.set_verbosity_error()
    input_rows: dict[str, Any] = {}
    positions: dict[str, Any] = {}
    names: dict[str, Any] = {}
    for mtype in sorted(CONFIG_MAPPING_NAMES):
        if only is not None and mtype not in only:
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cfg_cls = CONFIG_MAPPING[mtype]
                if getattr(cfg_cls, "sub_configs", None) or "vocab_size" not in cfg_cls().to_dict():
                    continue
                model_cls = getattr(transformers, str(MODEL_MAPPING_NAMES.get(mtype, "")), None)
                if model_cls is None:
                    continue
                rows_entry, position_entry, names_entry = _one(mtype, cfg_cls, model_cls)
        except Exception:  # noqa: BLE001,S112 - a class that cannot be built from its defaults here
            continue
        if rows_entry is not None:
            input_rows[mtype] = rows_entry
        if position_entry is not None:
            positions[mtype] = position_entry
        if names_entry is not None:
            names[mtype] = names_entry
    return {"input_rows": input_rows, "position_tables": positions, "input_pieces": _pieces(),
            "embedding_names": names}


def _pieces() -> dict[str, Any]:
    """Concatenations (dim 0) into an input embedding in transformers' checkpoint conversion mapping."""
    from transformers import conversion_mapping
    from transformers.core_model_loading import Concatenate, WeightConverter

    out: dict[str, Any] = {}
    for owner, transforms in sorted(conversion_mapping._build_checkpoint_conversion_mapping().items()):
        for t in transforms:
            if not isinstance(t, WeightConverter):
                continue
            targets = t.target_patterns if isinstance(t.target_patterns, list) else [t.target_patterns]
            sources = t.source_patterns if isinstance(t.source_patterns, list) else [t.source_patterns]
            if (len(targets) == 1 and targets[0].endswith("embed_tokens.weight") and len(sources) > 1
                    and all(isinstance(o, Concatenate) and o.dim == 0 for o in t.operations)
                    and all(s.replace(".", "").replace("_", "").isalnum() for s in sources)):
                out[owner] = {"sources": sources, "target": targets[0]}
    return out
