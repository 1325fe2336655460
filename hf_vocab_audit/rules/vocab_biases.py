"""HVA106: vocabulary-sized biases (BART/Marian/Pegasus ``final_logits_bias``, MLM prediction biases)."""

from __future__ import annotations

from collections.abc import Iterator

from ..core.findings import Location, Severity
from ..core.fixes import Applicability, Fix, FixAvailability, GrowBias
from ..facts import Facts
from ..facts.requirements import Requirement
from .registry import Hit, rule


@rule("HVA106", "vocab-bias-size-mismatch", Severity.ERROR, requires=(Requirement.INPUT_EMBEDDING,), fix=FixAvailability.SOMETIMES)
def vocab_bias_size_mismatch(facts: Facts) -> Iterator[Hit]:
    """A vocabulary-sized bias (`final_logits_bias`, an MLM prediction bias) has a different length than the
    vocabulary rows.

    Why:
    transformers builds these biases with `vocab_size` entries: a checkpoint whose bias is shorter or longer
    than its embedding rows stops `from_pretrained` with a size mismatch (`You set ignore_mismatched_sizes
    to False`), and `ignore_mismatched_sizes=True` replaces the trained bias. It happens when the embeddings
    were resized by hand (or by a tool that knows only embeddings) and the bias was left behind.

    Fix:
    Grow the bias with the embeddings (`--fix` appends the mean of its entries), or resize the model with
    `resize_token_embeddings`, which resizes `final_logits_bias` too. A bias longer than the rows is not cut:
    decide which size is right.
    """
    emb = facts.embeddings
    assert emb is not None and emb.input is not None
    rows, input_rows = emb.output_rows or emb.input.rows, emb.input.rows
    assert rows is not None and input_rows is not None
    for t in emb.vocab_biases:
        length = t.shape[-1]
        if length == rows:
            continue
        fix = None
        if length < rows and length <= input_rows:
            fix = Fix(f"grow {t.name} to {rows} entries (old entries kept; new = their mean)",
                      Applicability.SAFE, (GrowBias(rows, t.name),))
        yield Hit(
            f"{t.name} has {length} entries but the vocabulary has {rows} rows: from_pretrained fails with a "
            "size mismatch",
            Location(file=t.file, tensor=t.name),
            hint=None if fix else f"{t.name} is longer than the embeddings: check which size the model was "
                                  "trained with, then resize the other",
            fix=fix,
            details={"tensor": t.name, "length": length, "rows": rows, "shape": list(t.shape)},
        )
