"""Check one batch against the live limits: one vectorised min/max pass per tensor.

The fast path reads only each tensor's (min, max) and its shape; exact offender locations, counts and
the likely cause are computed only after a value is out of range. Verdicts follow what the forward does
on CPU (measured): ids index embeddings, labels index the logits (the ignore index excepted), explicit
``position_ids`` index the position table after its offset, a RoBERTa-style model numbers positions from
``padding_idx + 1`` over the non-pad tokens only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core.codec import JsonForm
from ..errors import import_torch
from ..facts.limits import (
    ATTENTION_MASK,
    DECODER_INPUT_IDS,
    INPUT_IDS,
    LABELS,
    POSITION_IDS,
    TOKEN_TYPE_IDS,
    Bound,
    LabelKind,
)
from .limits import LiveLimits

CU_SEQ_LENS_KEYS = ("cu_seq_lens_q", "cu_seq_lens_k")
UNSIGNED = {1: "uint8", 2: "uint16", 4: "uint32", 8: "uint64"}


@dataclass(frozen=True)
class BatchViolation(JsonForm):
    """One key of one batch out of range: the first offender, how many there are, why, and the fix."""

    code: str
    key: str
    message: str
    limit: int | None
    count: int
    rows: int
    row: int | None
    position: int | None
    value: int | float | None
    cause: str
    fix: str


def is_id_key(key: str) -> bool:
    return key == "input_ids" or key.endswith("_input_ids")


def is_mask_key(key: str) -> bool:
    return key == "attention_mask" or key.endswith("_attention_mask")


def check_batch(batch: Mapping[str, Any], limits: LiveLimits, *, host_only: bool = False) -> list[BatchViolation]:
    """Every violation in ``batch`` (a mapping of tensors); empty when the batch is safe.

    ``host_only`` skips tensors that are not on the CPU: reading a device tensor's min/max is a sync.
    """
    torch = import_torch(None, "checking a batch (the training guard)")

    found: list[BatchViolation] = []
    inputs, bounds = limits.inputs, limits.bounds  # the one limits model (facts.limits.InputLimits) and its bounds
    for key, t in batch.items():
        if not isinstance(t, torch.Tensor) or t.numel() == 0 or t.device.type == "meta":
            continue
        if host_only and t.device.type != "cpu":
            continue
        if is_id_key(key):
            rows = _below(bounds[DECODER_INPUT_IDS if key.startswith("decoder_") else INPUT_IDS])
            if inputs.replaced_ids and rows is not None and not _in_range(t, rows, None):
                for replaced in inputs.replaced_ids:  # swapped for a valid id before the lookup
                    t = t.masked_fill(t == replaced, 0)
            found += _range(key, t, 0, rows, limits, kind="ids")
            found += _length(key, t, batch, limits)
        elif key == "labels":
            found += _labels(key, t, batch, limits)
        elif key == "token_type_ids":
            found += _range(key, t, 0, _below(bounds[TOKEN_TYPE_IDS]), limits, kind="types")
        elif key == "position_ids" and bounds[POSITION_IDS] is not None:
            found += _range(key, t, 0, _below(bounds[POSITION_IDS]), limits, kind="positions")
        elif is_mask_key(key) and bounds[ATTENTION_MASK] is not None:
            found += _range(key, t, 0, _below(bounds[ATTENTION_MASK]), limits, kind="mask")
        elif key in CU_SEQ_LENS_KEYS:
            found += _cu_seq_lens(key, t, batch)
    return found


def _below(bound: Bound | None) -> int | None:
    return None if bound is None else bound.below


def _labels(key: str, t: Any, batch: Mapping[str, Any], limits: LiveLimits) -> list[BatchViolation]:
    """``labels`` as the head's loss reads them (``InputLimits.label_kind``)."""
    inputs = limits.inputs
    kind, bound = inputs.label_kind, limits.bounds[LABELS]
    if kind == LabelKind.LM and bound is not None:
        found = _range(key, t, 0, bound.below, limits, kind="lm-labels", allow=bound.ignore,
                       skip_first=limits.shifts_labels)
        if limits.is_encoder_decoder and "decoder_input_ids" not in batch:
            found += _length(key, t, batch, limits)  # the decoder reads the shifted labels
        return found
    if kind in (LabelKind.CLASSES, LabelKind.TOKEN_CLASSES) and bound is not None:
        return _range(key, t, 0, bound.below, limits, kind="class-labels", allow=bound.ignore)
    if kind == LabelKind.CTC and bound is not None:
        return _ctc_labels(key, t, bound.below, limits)
    if kind == LabelKind.MULTI_LABEL and inputs.num_labels is not None:
        return _label_vectors(key, t, inputs.num_labels)
    if kind == LabelKind.CHOICES:
        ids = batch.get("input_ids")  # choices x length per example, as the head reads them
        if ids is not None and getattr(ids, "dim", lambda: 0)() >= 3:
            choices = int(ids.shape[1])
            return _range(key, t, 0, choices, limits, kind="choice-labels", allow=inputs.ignore_index)
    return []  # regression targets, QA positions (clamped to the length): no range


def _ctc_labels(key: str, t: Any, rows: int, limits: LiveLimits) -> list[BatchViolation]:
    """CTC targets: every negative is padding (masked out); a value >= the head's rows raises ValueError."""
    if t.dtype.is_floating_point or t.dtype.is_complex or int(t.max()) < rows:
        return []
    bad = t >= rows
    count = int(bad.sum())
    first = [int(i) for i in bad.nonzero()[0].tolist()]
    value = int(t[tuple(first)])
    n_rows = int(bad.reshape(t.shape[0], -1).any(1).sum()) if t.dim() >= 1 else 1
    where = f"{key}[{', '.join(map(str, first))}]"
    return [BatchViolation(
        "HVA562", key, f"{where} = {value} >= the {rows} rows of the CTC head (vocab_size); {count} bad value(s) in "
        f"{n_rows} row(s)", rows, count, n_rows, first[0] if t.dim() >= 1 else None,
        first[1] if t.dim() >= 2 else None, value,
        "CTC targets encoded with another tokenizer or processor than the model's (its vocab_size)",
        "encode the transcripts with the model's own processor (processor(text=...)); pad targets with -100")]


def _label_vectors(key: str, t: Any, num_labels: int) -> list[BatchViolation]:
    """Multi-label targets: one vector of ``num_labels`` numbers per example (BCEWithLogitsLoss compares shapes)."""
    width = int(t.shape[-1]) if t.dim() >= 1 else None
    if t.dim() == 2 and width == num_labels:
        return []
    shape = tuple(int(d) for d in t.shape)
    return [BatchViolation(
        "HVA560", key, f"{key} has shape {shape}: a multi-label head needs one vector of {num_labels} values per "
        "example", num_labels, 1, int(t.shape[0]) if t.dim() >= 1 else 1, None, None, width,
        "label vectors built for another label set, or class ids given to a multi_label_classification head",
        f"build each label as a multi-hot vector of num_labels={num_labels} floats")]


def _range(key: str, t: Any, low: int, high: int | None, limits: LiveLimits, *, kind: str,
           allow: int | None = None, skip_first: bool = False) -> list[BatchViolation]:
    """Type, then range (see :func:`_in_range`); the offenders are located only after a failure."""
    import torch

    if high is None:
        return []
    if t.dtype.is_floating_point or t.dtype.is_complex or t.dtype == torch.bool:
        if kind in ("class-labels", "choice-labels") or (kind == "mask" and t.dtype == torch.bool):
            return []  # float class labels mean multi-label or regression: nothing is indexed
        return [BatchViolation("HVA530", key, f"{key} has dtype {t.dtype}: the model indexes with it, so it must be an "
                          "integer tensor", None, t.numel(), t.shape[0] if t.dim() else 1, None, None, None,
                          f"{key} was built as {t.dtype} (a float tensor from torch.tensor on floats, or an "
                          "unconverted numpy array)", f"build {key} with dtype=torch.long")]
    if _in_range(t, high, allow):
        return []
    if skip_first and t.dim() >= 1 and t.shape[-1] > 1:
        # Causal LMs score labels[..., 1:]: a bad first label never reaches the loss (nor crashes it).
        if not _range(key, t[..., 1:], low, high, limits, kind=kind, allow=allow):
            return []
        return [_locate(key, t, low, high, limits, kind, allow, skip_first=True)]
    return [_locate(key, t, low, high, limits, kind, allow)]


def _in_range(t: Any, high: int, allow: int | None, *, host: bool | None = None) -> bool:
    """Whether every value of integer tensor ``t`` is in ``0..high-1`` (or equals ``allow``, a negative).

    On the host, one numpy max over the values read as unsigned integers: negatives wrap to huge values,
    so ``max < high`` alone proves ``0 <= v < high`` (about 0.15 ns per int64 value, several times faster
    than ``torch.aminmax``). With the ignore index present, the largest unsigned value must be the ignore
    index itself, and two more passes (signed min and max) finish the proof. Device tensors (hooks mode)
    use one ``torch.aminmax`` and, with the ignore index, one more masked pass; reading them syncs.
    """
    import torch

    if host if host is not None else t.device.type == "cpu":
        a = t.detach().numpy()
        unsigned = a.view(UNSIGNED[a.dtype.itemsize]) if a.dtype.kind == "i" else a
        top = int(unsigned.max())
        if top < high:
            return True
        if allow is None or a.dtype.kind != "i" or top != allow % (1 << (8 * a.dtype.itemsize)):
            return False
        return int(a.min()) == allow and int(a.max()) < high
    lo_t, hi_t = torch.aminmax(t)
    lo, hi = int(lo_t), int(hi_t)
    if lo >= 0 and hi < high:
        return True
    if allow is not None and lo == allow and hi < high:
        return int(torch.where(t == allow, 0, t).min()) >= 0
    return False


def _locate(key: str, t: Any, low: int, high: int, limits: LiveLimits, kind: str, allow: int | None,
            skip_first: bool = False) -> BatchViolation:
    """The slow path, after a failure: count, first offender, most common value, cause and fix."""
    bad = (t < low) | (t >= high)
    if allow is not None:
        bad &= t != allow
    if skip_first:
        bad[..., 0] = False
    count = int(bad.sum())
    first = [int(i) for i in bad.nonzero()[0].tolist()]
    value = int(t[tuple(first)])
    row = first[0] if t.dim() >= 1 else None
    pos = first[1] if t.dim() >= 2 else None
    rows = int(bad.reshape(t.shape[0], -1).any(1).sum()) if t.dim() >= 1 else 1
    values = t[bad]
    common = int(values.mode().values) if values.numel() else value
    code, what, cause, fix = _explain(kind, key, values, value, common, high, limits)
    where = f"{key}[{', '.join(map(str, first))}]"
    message = f"{where} = {value} {what}; {count} bad value(s) in {rows} row(s)"
    return BatchViolation(code, key, message, high, count, rows, row, pos, value, cause, fix)


def _explain(kind: str, key: str, values: Any, value: int, common: int, high: int,
             limits: LiveLimits) -> tuple[str, str, str, str]:
    """(code, what is wrong, likely cause, fix) for the offending ``values`` of one key."""
    lo, hi = int(values.min()), int(values.max())
    resize = "model.resize_token_embeddings(len(tokenizer)) after adding tokens (grow only: never shrink a padded model)"
    if kind == "ids":
        table = "decoder input-embedding" if key.startswith("decoder_") else "input-embedding"
        if value < 0:
            if common == limits.ignore_index:
                cause = (f"{limits.ignore_index} (the loss ignore index) was copied into {key}: labels padding "
                         "reached the ids")
            elif common == -1:
                cause = "-1 reached the ids: padded with an unset pad id (-1), or a -1 marker left in them"
            else:
                cause = "negative ids: the ids were built or shifted by hand"
            return ("HVA502", "is negative", cause, f"pad {key} with tokenizer.pad_token_id; put {limits.ignore_index} "
                    "only in labels")
        what = f">= the {high} {table} rows" + (f" ({limits.input_module})" if limits.input_module else "")
        return ("HVA501", what, _id_cause(common, high, limits), resize)
    if kind == "lm-labels":
        what = (f"is negative but not the ignore index {limits.ignore_index}" if value < 0
                else f">= the {high} output-projection rows (lm_head)")
        if lo < 0 and lo != limits.ignore_index:
            cause = (f"labels were padded or masked with -1 instead of the ignore index {limits.ignore_index} (a "
                     "collator's label_pad_token_id=-1, or a -1 marker left in the labels)"
                     if lo == -1 else "negative labels other than the ignore index")
            fix = f"mask positions without a loss with {limits.ignore_index}"
        elif limits.pad_token_id is not None and common == limits.pad_token_id and common >= high:
            cause = (f"labels were padded with the pad id {common} (instead of {limits.ignore_index}), and that id "
                     "has no output row")
            fix = f"pad labels with {limits.ignore_index} (DataCollatorForSeq2Seq does: label_pad_token_id=-100); {resize}"
        else:
            cause = _id_cause(common, high, limits)
            fix = resize
        return ("HVA520", what, cause, fix)
    if kind == "class-labels":
        n = high
        fix = f"class labels run 0..{n - 1} (or {limits.ignore_index} to skip); build the model with num_labels=<classes>"
        if lo == -1 and hi < n:
            return ("HVA512", f"is -1, outside 0..{n - 1}", "-1 marks unlabelled or unknown examples", fix)
        if lo >= 1 and hi == n:
            return ("HVA511", f"is outside 0..{n - 1}", f"1-based labels: classes numbered 1..{n}",
                    "subtract 1 from every label (map them with label2id)")
        return ("HVA510", f"is outside 0..{n - 1} (num_labels {n})",
                f"the data has {hi + 1 if hi >= n else 'negative'} classes but the head has {n} rows (num_labels)", fix)
    if kind == "choice-labels":
        return ("HVA561", f"is outside 0..{high - 1} (the batch has {high} choices per example)",
                "choice indices numbered from 1, or labels built for more choices than the batch holds",
                f"labels index the choices: 0..{high - 1} (or {limits.ignore_index} to skip)")
    if kind == "types":
        if value < 0:
            return ("HVA502", "is negative", "negative token types were built by hand", "token types start at 0")
        return ("HVA503", f">= the {high} token-type row(s) (type_vocab_size)",
                f"sentence pairs encoded with segment ids up to {hi} for a model with {high} token type(s) "
                "(RoBERTa-style models have one)",
                "drop token_type_ids (return_token_type_ids=False) or use the model's own tokenizer")
    if kind == "positions":
        if value < 0:
            return ("HVA502", "is negative", "position_ids were shifted or built by hand",
                    "positions start at 0 for each sequence")
        return ("HVA504", f">= the {high} usable positions of the position table",
                "position_ids past the table: packing or padding-free collators number positions per sequence; "
                "a sequence longer than the model's positions was packed whole",
                f"truncate every sequence to {high} tokens before packing; restart position_ids at 0 per sequence")
    if kind == "mask":
        return ("HVA540", "is not 0 or 1 (flash-attention unpads by summing the mask)",
                "attention_mask carries sequence ids or was added to itself",
                "use a 0/1 mask; pass packed sequences as position_ids or cu_seq_lens")
    raise ValueError(kind)


def _id_cause(value: int, rows: int, limits: LiveLimits) -> str:
    pad, n = limits.pad_token_id, limits.tokenizer_length
    if n is None:  # no tokenizer was examined: say what the cause could be, and how to know which
        return (f"not known: the guard was given no tokenizer, so it cannot tell tokens added without a resize, "
                f"a pad id set to {rows} in code, or ids from another tokenizer apart (pass the tokenizer: "
                "guard_trainer(trainer, tokenizer=tokenizer) or guard(model, tokenizer))")
    if pad is not None and value == pad and pad >= rows:
        name = f" {limits.pad_token!r}" if limits.pad_token else ""
        return (f"the pad token{name} (id {pad}) has no embedding row: a pad token was added to the tokenizer "
                "without resizing the model")
    if n is not None and rows <= value < n:
        return (f"tokens were added to the tokenizer (it has {n} ids) without resizing the model ({rows} rows)")
    if value == rows:
        return f"an id equal to the row count ({rows}): often a pad id set to vocab_size in code"
    return "ids from a different tokenizer, or a model with fewer rows than its tokenizer"


def _length(key: str, t: Any, batch: Mapping[str, Any], limits: LiveLimits) -> list[BatchViolation]:
    """Sequence length against the learned positions (no data pass unless the shape is already too long)."""
    usable, padding_idx = limits.inputs.positions, limits.inputs.padding_idx
    if usable is None or t.dim() < 1 or ("position_ids" in batch and padding_idx is not None):
        return []
    length = int(t.shape[-1])
    if length <= usable:
        return []
    if padding_idx is not None:
        # RoBERTa numbers only the non-pad tokens (pad id == padding_idx): fixed-length padding past the table is fine.
        used = (t != padding_idx).sum(-1)
        longest = int(used.max())
        if longest <= usable:
            return []
        row = int(used.argmax()) if t.dim() >= 2 else None
        rows = int((used > usable).sum()) if t.dim() >= 2 else 1
        length = longest
    else:
        row, rows = (0 if t.dim() >= 2 else None), (int(t.shape[0]) if t.dim() >= 2 else 1)
    message = (f"{key} has sequences of {length} tokens > the {usable} positions the model can use"
               + (" (RoBERTa-style: rows - padding_idx - 1)" if padding_idx is not None else ""))
    return [BatchViolation("HVA504", key, message, usable, rows, rows, row, usable, length,
                      "no truncation: a long text reached the model whole",
                      f"tokenize with truncation=True, max_length={usable}")]


def _cu_seq_lens(key: str, t: Any, batch: Mapping[str, Any]) -> list[BatchViolation]:
    import torch

    ids = batch.get("input_ids")
    total = int(ids.shape[-1]) if isinstance(ids, torch.Tensor) and ids.dim() >= 1 else None
    if t.dim() != 1 or t.dtype.is_floating_point:
        problem = f"must be a 1-D integer tensor, not {tuple(t.shape)} {t.dtype}"
    elif int(t[0]) != 0:
        problem = f"starts at {int(t[0])}, not 0"
    elif t.numel() > 1 and int(torch.diff(t).min()) < 0:
        at = int((torch.diff(t) < 0).nonzero()[0, 0]) + 1
        problem = f"decreases at index {at} ({int(t[at - 1])} -> {int(t[at])})"
    elif total is not None and int(t[-1]) != total:
        problem = f"ends at {int(t[-1])}, but the packed row has {total} tokens"
    else:
        return []
    return [BatchViolation("HVA541", key, f"{key} {problem}", total, 1, 1, None, None, None,
                      "packed sequence boundaries built by hand, or a batch truncated after packing",
                      "build them with DataCollatorWithFlattening(return_flash_attn_kwargs=True)")]
