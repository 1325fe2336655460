"""A "shape twin": the model class built from its config with the real row counts and tiny hidden sizes.

Every index a forward can fail on (embedding rows, logits, token types, positions, classes) depends on
row counts, never on hidden sizes or weights, so the twin reproduces the CPU exception of the real model
in seconds without loading a weight. Only transformers' own classes are built: no code from a checkpoint.
"""

from __future__ import annotations

from typing import Any

from ..errors import AuditError, import_torch

LAYER_KEYS = ("num_hidden_layers", "num_layers", "n_layer", "encoder_layers", "decoder_layers",
              "num_decoder_layers")
HEAD_KEYS = ("num_attention_heads", "n_head", "num_heads", "encoder_attention_heads", "decoder_attention_heads")
HIDDEN_KEYS = ("hidden_size", "d_model", "n_embd", "embedding_size")
FFN_KEYS = ("intermediate_size", "d_ff", "n_inner", "encoder_ffn_dim", "decoder_ffn_dim", "ffn_dim",
            "moe_intermediate_size", "shared_expert_intermediate_size")
HEAD_DIM, HEADS, HIDDEN, FFN = 4, 2, 8, 16
MAX_ROWS = 10_000_000  # a twin's tables stay under ~320 MB (8 floats a row); real vocabularies are < 1 M


def model_class(name: str | None, config: Any) -> type:
    """A transformers model class by name (from the sidecar or ``architectures``); never remote code."""
    import transformers

    candidates = [name] if name else []
    candidates += list(getattr(config, "architectures", None) or [])
    for cand in candidates:
        cls = getattr(transformers, str(cand), None) if cand and str(cand).isidentifier() else None
        if isinstance(cls, type) and issubclass(cls, transformers.PreTrainedModel):
            return cls
    raise AuditError(None, f"model class {candidates[0] if candidates else '(none)'} is not a transformers class: "
                     "a custom model cannot be replayed without running its code")


def config_of(config_dict: dict[str, Any], where: str) -> Any:
    """A transformers config from JSON, for a ``model_type`` transformers itself knows."""
    from transformers import CONFIG_MAPPING

    model_type = config_dict.get("model_type")
    if not isinstance(model_type, str) or model_type not in CONFIG_MAPPING:
        raise AuditError(where, f"model_type {model_type!r} is not built into transformers: cannot replay it")
    data = {k: v for k, v in config_dict.items() if k not in ("auto_map", "transformers_version")}
    try:
        return CONFIG_MAPPING[model_type].from_dict(data)
    except Exception as exc:  # noqa: BLE001 - any bad value in an untrusted config
        raise AuditError(where, f"not a valid {model_type} config ({type(exc).__name__}: {exc})") from None


def _shrink(config: Any) -> None:
    for key in LAYER_KEYS:
        if isinstance(getattr(config, key, None), int):
            setattr(config, key, 1)
    if isinstance(getattr(config, "layer_types", None), list):
        config.layer_types = config.layer_types[:1]
    for key in HEAD_KEYS:
        if isinstance(getattr(config, key, None), int):
            setattr(config, key, HEADS)
    kv = getattr(config, "num_key_value_heads", None)
    if isinstance(kv, int):
        config.num_key_value_heads = 1 if kv == 1 else HEADS
    for key in ("head_dim", "d_kv"):
        if isinstance(getattr(config, key, None), int):
            setattr(config, key, HEAD_DIM)
    for key in HIDDEN_KEYS:
        if isinstance(getattr(config, key, None), int):
            setattr(config, key, HIDDEN)
    for key in FFN_KEYS:
        if isinstance(getattr(config, key, None), int):
            setattr(config, key, FFN)


def build_twin(config_dict: dict[str, Any], class_name: str | None, *, input_rows: int | None,
               output_rows: int | None, type_rows: int | None, position_rows: int | None, position_offset: int,
               num_labels: int | None, where: str) -> Any:
    """The twin of ``class_name`` with these row counts (``None`` keeps the config's)."""
    torch = import_torch(where, "building a shape twin of the model")
    nn = torch.nn

    for what, rows in (("input rows", input_rows), ("output rows", output_rows), ("token-type rows", type_rows),
                       ("position rows", position_rows), ("num_labels", num_labels)):
        if rows is not None and not 0 < rows <= MAX_ROWS:
            raise AuditError(where, f"{what} {rows} is not a plausible row count for a shape twin (1..{MAX_ROWS})")
    config = config_of(config_dict, where)
    cls = model_class(class_name, config)
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    _shrink(config)
    if text is not config:
        _shrink(text)
    if input_rows is not None:
        text.vocab_size = input_rows
    if type_rows is not None and hasattr(text, "type_vocab_size"):
        text.type_vocab_size = type_rows
    if position_rows is not None:
        for key in ("max_position_embeddings", "n_positions"):
            if isinstance(getattr(text, key, None), int):
                setattr(text, key, position_rows - position_offset)
    if num_labels is not None and getattr(config, "num_labels", None) != num_labels:
        config.id2label = {i: f"LABEL_{i}" for i in range(num_labels)}
        config.label2id = {v: k for k, v in config.id2label.items()}
    pad = getattr(text, "pad_token_id", None)
    if isinstance(pad, int) and text.vocab_size is not None and not 0 <= pad < text.vocab_size:
        text.pad_token_id = None  # building would assert; the real run must have had it unset or unused
    torch.manual_seed(0)
    try:
        model = cls(config)
    except Exception as exc:  # noqa: BLE001 - any construction failure means: use --weights
        raise AuditError(where, f"could not build a shape twin of {cls.__name__} ({type(exc).__name__}: {exc}); "
                         "rerun with --weights") from None
    out = model.get_output_embeddings()
    if output_rows is not None and isinstance(out, nn.Linear) and out.out_features != output_rows:
        model.set_output_embeddings(nn.Linear(out.in_features, output_rows, bias=out.bias is not None))
    return model.eval()
