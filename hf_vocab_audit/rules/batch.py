"""HVA54x: faults only a live batch shows (``hf_vocab_audit.guard``); ids, labels and positions reuse HVA5xx.

These rules have ``scope="batch"``: no static or dataset audit runs them; the guard checks every batch
the training script builds and raises :class:`hf_vocab_audit.guard.BatchIndexError` with the code. Their
registry entries carry the code, name, severity and documentation; the check itself is the guard's, against
the one limits model (``facts.limits.InputLimits``: the attention-mask bound is 2 under flash-attention),
so these functions yield nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..core.findings import Severity
from .registry import Hit, Scope, rule


@rule("HVA540", "batch-attention-mask-values", Severity.ERROR, scope=Scope.BATCH)
def batch_attention_mask_values(_facts: Any) -> Iterator[Hit]:
    """A batch's `attention_mask` holds values other than 0 and 1 under flash-attention.

    Why:
    Flash-attention's variable-length path unpads by summing the mask per row: a 2 (packed-sequence
    ids, a mask added twice) counts as two tokens, the cumulative lengths run past the tokens, and the
    kernel reads out of bounds (a device-side assert or an illegal memory access). The eager and SDPA
    paths treat any non-zero value as "attend", so the guard checks this only under flash-attention.

    Fix:
    Build the mask from `input_ids != pad_token_id` (0/1); pass packed sequences as `position_ids`
    or `cu_seq_lens_*` (`DataCollatorWithFlattening`), not as mask values.
    """
    return iter(())


@rule("HVA541", "batch-cu-seq-lens-invalid", Severity.ERROR, scope=Scope.BATCH)
def batch_cu_seq_lens_invalid(_facts: Any) -> Iterator[Hit]:
    """Packed `cu_seq_lens_q`/`cu_seq_lens_k` do not start at 0, decrease, or do not end at the token count.

    Why:
    Padding-free training passes the cumulative sequence lengths to the varlen attention kernel, which
    trusts them: an offset past the tokens reads out of bounds on the GPU, where the error names no tensor.

    Fix:
    Build them with `DataCollatorWithFlattening(return_flash_attn_kwargs=True)`, or as
    `[0, len_1, len_1 + len_2, ..., total]` over the packed row.
    """
    return iter(())
