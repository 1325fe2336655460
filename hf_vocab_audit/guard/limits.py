"""The limits a batch must respect, read from the live modules (not the config).

A training script can add tokens, resize, swap heads or run under DeepSpeed ZeRO-3 after the config was
written; only the modules know the row counts a forward will index into. Under ZeRO-3 a parameter is a
zero-sized placeholder and its real shape is in ``ds_shape``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from ..core.codec import JsonForm, Shape, decode
from ..errors import import_torch
from ..facts.limits import (
    ATTENTION_MASK,
    DECODER_INPUT_IDS,
    INPUT_IDS,
    LABELS,
    POSITION_IDS,
    TOKEN_TYPE_IDS,
    Bound,
    InputLimits,
    LabelKind,
    label_kind,
)
from ..facts.positions import OFFSET_TWO_TYPES, PADDING_OFFSET_TYPES

if TYPE_CHECKING:
    import torch

POSITION_NAMES = ("position_embeddings", "wpe", "embed_positions")
TOKEN_TYPE_NAMES = ("token_type_embeddings",)
CLASSIFIER_NAMES = ("classifier.out_proj", "classification_head.out_proj", "classifier", "score")
CTC_HEAD_NAMES = ("lm_head",)
_SKIP_PARTS = ("vision", "visual", "audio", "image", "patch", "speech", "mm_projector")
# Head kinds: which range `labels` must lie in (facts.limits.LabelKind decides; its values are these strings).
LM, CLASSES, TOKEN_CLASSES, NO_LABEL_CHECK = (LabelKind.LM.value, LabelKind.CLASSES.value,
                                              LabelKind.TOKEN_CLASSES.value, LabelKind.NONE.value)


@dataclass(frozen=True)
class LiveLimits(JsonForm):
    """What the live modules say (the guard's evidence record); :attr:`inputs` is the one limits model
    (``facts.limits.InputLimits``) built from it, which every check reads. ``None``: no such table."""

    model_class: str
    model_type: str | None
    name_or_path: str | None
    input_rows: int | None
    input_module: str | None
    decoder_input_rows: int | None
    output_rows: int | None
    label_kind: str
    num_labels: int | None
    type_rows: int | None
    position_rows: int | None  # rows of the learned absolute-position table
    position_offset: int  # added to explicit position_ids before the lookup (BART/OPT: 2)
    padding_idx: int | None  # RoBERTa-style: positions start at padding_idx + 1
    attn_implementation: str | None
    ignore_index: int = -100
    is_encoder_decoder: bool = False  # labels become the decoder's input ids (shifted right)
    shifts_labels: bool = False  # causal LMs score labels[..., 1:]: the first label never reaches the loss
    replaced_ids: tuple[int, ...] = ()  # ids the model swaps for a valid one before the lookup (Gemma-3 images)
    tokenizer_length: int | None = None
    pad_token_id: int | None = None
    pad_token: str | None = None
    added_token_ids: tuple[int, ...] = field(default_factory=tuple)
    _codec = Shape(computed={"usable_positions": "usable_positions"})  # written for a reader; ignored when read

    @cached_property
    def inputs(self) -> InputLimits:
        """These limits as the one limits model the static rules and the dataset kernel also check against."""
        kind = self.label_kind if self.label_kind in LabelKind._value2member_map_ else NO_LABEL_CHECK
        return InputLimits(
            input_rows=self.input_rows,
            output_rows=self.output_rows,
            type_vocab_size=self.type_rows,
            positions=self.usable_positions,
            num_labels=self.num_labels,
            decoder_input_rows=self.decoder_input_rows,
            position_ids_below=self.position_id_limit,
            padding_idx=self.padding_idx,
            label_kind=LabelKind(kind),
            ignore_index=self.ignore_index,
            replaced_ids=self.replaced_ids,
            attention_mask_below=2 if self.strict_attention_mask else None,
        )

    @cached_property
    def bounds(self) -> dict[str, Bound | None]:
        """:meth:`InputLimits.bound` of every batch key the guard checks, asked once (the per-batch path reads
        this dict: a guard check costs microseconds)."""
        return {key: self.inputs.bound(key) for key in (INPUT_IDS, DECODER_INPUT_IDS, TOKEN_TYPE_IDS, POSITION_IDS,
                                                         LABELS, ATTENTION_MASK)}

    @property
    def usable_positions(self) -> int | None:
        """Longest sequence the position table serves (RoBERTa 514 rows -> 512; BART rows - 2)."""
        if self.position_rows is None:
            return None
        if self.padding_idx is not None:
            return self.position_rows - self.padding_idx - 1
        return self.position_rows - self.position_offset

    @property
    def position_id_limit(self) -> int | None:
        """Explicit ``position_ids`` must be below this (the offset is added before the lookup)."""
        return None if self.position_rows is None else self.position_rows - self.position_offset

    @property
    def strict_attention_mask(self) -> bool:
        """Flash-attention's varlen path unpads by summing the mask: only 0/1 are safe there.

        The eager and SDPA paths treat any non-zero value as "attend" (measured on CPU), so they are not
        checked: a guard verdict must equal what the forward does.
        """
        impl = self.attn_implementation or ""
        return "flash" in impl

    @classmethod
    def from_dict(cls, data: Any) -> LiveLimits:
        """Limits from a sidecar's JSON (untrusted): ValueError (one line) names the first field of the wrong
        type, or the fields missing."""
        return decode(cls, data, where="limits")


def rows_of(weight: Any) -> int | None:
    """First dimension of a parameter, from ZeRO-3's ``ds_shape`` when present."""
    if weight is None:
        return None
    ds_shape = getattr(weight, "ds_shape", None)
    if ds_shape is not None and len(ds_shape) > 0:
        return int(ds_shape[0])
    shape = getattr(weight, "shape", None)
    return int(shape[0]) if shape is not None and len(shape) > 0 else None


def _module_rows(module: Any) -> int | None:
    if module is None:
        return None
    rows = rows_of(getattr(module, "weight", None))
    if rows:
        return rows
    for attr in ("num_embeddings", "out_features"):
        value = getattr(module, attr, None)
        if isinstance(value, int):
            return value
    return rows


def _named(model: torch.nn.Module, names: tuple[str, ...], kind: type) -> tuple[str, Any] | None:
    found = [(n, m) for n, m in model.named_modules()
             if isinstance(m, kind) and any(n == s or n.endswith("." + s) for s in names)
             and not any(p in n for p in _SKIP_PARTS)]
    if not found:
        return None
    for suffix in names:  # the names in priority order, then the shortest path
        hits = [(n, m) for n, m in found if n == suffix or n.endswith("." + suffix)]
        if hits:
            return min(hits, key=lambda nm: (nm[0].count("."), nm[0]))
    return None


def _replaced_ids(config: Any, model_type: str | None, cls_name: str) -> tuple[int, ...]:
    """Gemma-3 / PaliGemma multimodal classes replace an out-of-vocabulary image id with 0 before the lookup."""
    from ..facts.placeholders import REPLACES_OOV_IMAGE_ID

    classes = REPLACES_OOV_IMAGE_ID.get(model_type or "")
    if classes is None or cls_name == classes[1]:
        return ()
    ids = (getattr(config, key, None) for key in ("image_token_id", "image_token_index"))
    return tuple(sorted({i for i in ids if isinstance(i, int) and not isinstance(i, bool)}))


def _get(model: Any, getter: str) -> Any:
    """``model.get_input_embeddings()`` / ``get_output_embeddings()``, or None where a model has none."""
    method = getattr(model, getter, None)
    if not callable(method):
        return None
    try:
        return method()
    except (AttributeError, NotImplementedError):
        return None


def _label_kind(out: Any, cls_name: str, config: Any) -> str:
    """The head's label semantics, decided by the same function the static facts use (facts.limits)."""
    kind = label_kind(cls_name, getattr(config, "problem_type", None), getattr(config, "num_labels", 2),
                      has_output=out is not None)
    return kind.value


def limits_of(model: torch.nn.Module, tokenizer: Any = None, *, ignore_index: int = -100) -> LiveLimits:
    """Read the limits from the live modules of ``model`` (and cause hints from ``tokenizer``)."""
    nn = import_torch(None, "the training guard").nn

    from ..facts.sources.memory import unwrap

    model = unwrap(model)
    config = getattr(model, "config", None)
    model_type = getattr(config, "model_type", None)
    cls_name = type(model).__name__
    inp = _get(model, "get_input_embeddings")
    input_name = next((n for n, m in model.named_modules() if m is inp), None) if inp is not None else None
    input_rows = _module_rows(inp)
    decoder_rows = input_rows
    get_decoder = getattr(model, "get_decoder", None)
    if getattr(config, "is_encoder_decoder", False) and callable(get_decoder):
        try:
            dec = get_decoder()
            dec_in = dec.get_input_embeddings() if dec is not None else None
            decoder_rows = _module_rows(dec_in) or input_rows
        except (AttributeError, NotImplementedError):
            pass
    out = _get(model, "get_output_embeddings")
    kind = _label_kind(out, cls_name, config)
    num_labels = None
    if kind in (CLASSES, TOKEN_CLASSES, LabelKind.MULTI_LABEL.value):
        head = _named(model, CLASSIFIER_NAMES, nn.Linear)
        num_labels = _module_rows(head[1]) if head else getattr(config, "num_labels", None)
    output_rows = _module_rows(out) if kind == LM else None
    if kind == LabelKind.CTC.value:  # CTC labels index the CTC head's rows (transformers compares vocab_size)
        ctc = _named(model, CTC_HEAD_NAMES, nn.Linear)
        output_rows = getattr(config, "vocab_size", None) or (_module_rows(ctc[1]) if ctc else None)
    type_mod = _named(model, TOKEN_TYPE_NAMES, nn.Embedding)
    pos = _named(model, POSITION_NAMES, nn.Embedding)
    position_rows = _module_rows(pos[1]) if pos else None
    offset = int(getattr(pos[1], "offset", 0) or 0) if pos else 0
    if pos and not offset and model_type in OFFSET_TWO_TYPES:
        offset = 2
    padding_idx = None
    if pos and model_type in PADDING_OFFSET_TYPES and getattr(pos[1], "padding_idx", None) is not None:
        padding_idx = int(pos[1].padding_idx)
    tok_len = pad_id = pad_tok = None
    added: tuple[int, ...] = ()
    if tokenizer is not None:
        tok_len = len(tokenizer)
        pad_id = getattr(tokenizer, "pad_token_id", None)
        pad_tok = getattr(tokenizer, "pad_token", None)
        decoder = getattr(tokenizer, "added_tokens_decoder", None) or {}
        added = tuple(sorted(int(i) for i in decoder))
    return LiveLimits(
        model_class=cls_name,
        model_type=model_type,
        name_or_path=getattr(config, "_name_or_path", None) or None,
        input_rows=input_rows,
        input_module=input_name,
        decoder_input_rows=decoder_rows,
        output_rows=output_rows,
        label_kind=kind,
        num_labels=num_labels,
        type_rows=_module_rows(type_mod[1]) if type_mod else None,
        position_rows=position_rows,
        position_offset=offset,
        padding_idx=padding_idx,
        attn_implementation=getattr(config, "_attn_implementation", None),
        ignore_index=ignore_index,
        is_encoder_decoder=bool(getattr(config, "is_encoder_decoder", False)),
        shifts_labels=kind == LM and not getattr(config, "is_encoder_decoder", False)
        and cls_name.endswith(("ForCausalLM", "LMHeadModel")),
        replaced_ids=_replaced_ids(config, model_type, cls_name),
        tokenizer_length=tok_len,
        pad_token_id=pad_id,
        pad_token=str(pad_tok) if pad_tok is not None else None,
        added_token_ids=added,
    )
