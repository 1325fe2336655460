"""HVA6xx: token rows of the embedding matrices that were never trained (``check --weights``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..core.findings import Location, Severity
from ..core.fixes import Applicability, Fix, FixAvailability, ReinitRows
from ..weights.status import SUSPECT, UNTRAINED

if TYPE_CHECKING:  # the analysis imports numpy: only a --weights run loads it (rules.runner.run_weights)
    from ..weights.analysis import WeightFacts
from .registry import Hit, Scope, rule

SIDE_WORDS = {"input": "input embedding", "output": "lm_head"}
NEW_MEAN_ROWS = ("new rows, already set to the mean of the trained rows (by a mean resize or `--fix`): the "
                 "recommended start, and `--fix --unsafe-fixes` would not change them; make sure the token occurs "
                 "in the training data and the embeddings are trainable (with LoRA: `modules_to_save` or "
                 "`trainable_token_indices`)")
PHRASES = {"zero": "is all zero", "mean": "equals the mean of the other rows (a mean resize, never trained)",
           "low-norm": "has a norm far below the ordinary tokens'"}


def _describe(w: WeightFacts, token_id: int, wanted: int) -> tuple[list[str], dict[str, dict]]:
    """Sentences like "input embedding row all zero (norm 0, max |v| 0)" for the sides in ``wanted``."""
    import numpy as np

    parts, details = [], {}
    for side in w.sides_with(token_id):
        ind = side.indicators(token_id)
        details[side.name] = ind
        if int(side.cls.status[token_id]) != wanted:
            continue
        twin = ind["duplicate_of"]
        if twin is None and "duplicate" in ind["reasons"]:  # the first row of its group: name the next one
            twin = int(next(i for i in np.flatnonzero(side.stats.duplicate_of == token_id) if i != token_id))
        words = {**PHRASES, "duplicate": f"identical to row {twin}"}
        reasons = [r for r in ind["reasons"] if r != "low-norm" or len(ind["reasons"]) == 1]
        why = " and ".join(words[r] for r in reasons)
        parts.append(f"{SIDE_WORDS[side.name]} row {why} (norm {ind['norm']:.3g}, max |v| {ind['max_abs']:.3g}, "
                     f"median norm {ind['median_norm']:.3g})")
    return parts, details


def _hits(w: WeightFacts, wanted: int, what: str) -> Iterator[Hit]:
    tok = w.facts.required_tokenizer()
    tensors = [s.stats.tensor for s in w.sides]
    for token_id in w.flagged_ids():
        sides = w.sides_with(token_id)
        if not w.used(token_id) or not any(int(s.cls.status[token_id]) == wanted for s in sides):
            continue
        parts, details = _describe(w, token_id, wanted)
        content = tok.id_to_token(token_id)
        roles = [r for r in w.roles.get(token_id, []) if r != "reserved"]
        bad_sides = [s for s in sides if int(s.cls.status[token_id]) == wanted]
        location = Location(file=bad_sides[0].file, tensor=bad_sides[0].stats.tensor, token=content, token_id=token_id)
        message = f"{content!r} (id {token_id}, {', '.join(roles)}) {what}: {'; '.join(parts)}"
        if all("mean" in details[s.name]["reasons"] for s in bad_sides):
            # New rows already at the mean of the trained rows (a mean resize, or --fix itself): the
            # re-initialisation would write the same bytes, so none is offered; the advice is for training.
            yield Hit(message, location, hint=NEW_MEAN_ROWS, details={"token_id": token_id, "roles": roles, **details})
            continue
        yield Hit(
            message,
            location,
            fix=Fix(
                f"set row {token_id} of {', '.join(s.stats.tensor for s in bad_sides)} to the mean of the trained rows",
                Applicability.UNSAFE,
                (ReinitRows((token_id,), tuple(s.stats.tensor for s in bad_sides), tuple(tensors)),),
            ),
            details={"token_id": token_id, "roles": roles, **details},
        )


@rule("HVA601", "untrained-token-row", Severity.WARNING, scope=Scope.WEIGHTS, fix=FixAvailability.SOMETIMES)
def untrained_token_row(w: WeightFacts) -> Iterator[Hit]:
    """A token the tokenizer emits in normal use has an untrained embedding or lm_head row.

    Why:
    Rows that are all zero, equal to the mean of the other rows (left by `resize_token_embeddings`), or
    bitwise copies of another row were never updated by training. Fine-tuning with such a token as input
    gives NaN or garbage losses (Llama-3 base with the instruct chat template: `<|eot_id|>`,
    `<|start_header_id|>`; unsloth #1056, #658), and a model whose lm_head row for eos is untrained never
    stops generating. Checked: bos/eos/sep/cls, tokens used by the chat template, and added tokens
    (not pad: its row is zero by design; not reserved placeholders, counted by HVA603).

    Fix:
    Train the rows (make sure the token occurs in the data and the embeddings are trainable), or set them
    to the mean of the trained rows before fine-tuning (`--fix --unsafe-fixes`, unsloth's fix). Rows that
    already equal that mean (a mean resize, or `--fix`'s own new rows) get no fix: only training changes them.
    """
    yield from _hits(w, UNTRAINED, "has an untrained row")


@rule("HVA602", "low-norm-token-row", Severity.WARNING, scope=Scope.WEIGHTS, fix=FixAvailability.ALWAYS)
def low_norm_token_row(w: WeightFacts) -> Iterator[Hit]:
    """A token the tokenizer emits in normal use has a row whose norm is far below the ordinary tokens'.

    Why:
    Under-trained tokens keep embedding norms far below the rest (Land & Bartolo 2024, "Fishing for
    Magikarp", arXiv 2405.05417). The threshold is robust: a row is flagged when its norm is below both
    exp(median - 5 x MAD-sigma) of ln(norm) over the ordinary token rows and half the median norm.

    Fix:
    Check the token occurs in the training data; consider re-initialising the row to the mean of the
    trained rows (`--fix --unsafe-fixes`) before fine-tuning with it.
    """
    yield from _hits(w, SUSPECT, "has a suspiciously small row")


@rule("HVA603", "untrained-rows-summary", Severity.INFO, scope=Scope.WEIGHTS)
def untrained_rows_summary(w: WeightFacts) -> Iterator[Hit]:
    """Count of untrained or low-norm rows of tokens not emitted in normal use (reserved, unused, rare).

    Why:
    Reserved placeholders (`<|reserved_special_token_N|>`, `[unusedN]`) are never trained; that is
    harmless until one is repurposed, when it behaves like HVA601.

    Fix:
    Before giving a reserved token a job (a pad or chat marker), re-initialise its rows to the mean of
    the trained rows and train it.
    """
    # pad rows are zero by design (padding_idx) and masked out: not worth a line.
    others = [i for i in w.flagged_ids() if not w.used(i) and "pad" not in w.roles.get(i, [])]
    if not others:
        return
    tok = w.facts.required_tokenizer()
    per_side = []
    for side in w.sides:
        status = side.cls.status[[i for i in others if i < side.stats.rows]]
        u, s = int((status == UNTRAINED).sum()), int((status == SUSPECT).sum())
        if u or s:
            per_side.append(f"{SIDE_WORDS[side.name]} {u} untrained, {s} low-norm")
    reserved = sum(1 for i in others if "reserved" in w.roles.get(i, []))
    examples = ", ".join(f"{tok.id_to_token(i)!r} ({i})" for i in others[:5])
    of_which = f" ({reserved} reserved placeholders)" if reserved else ""
    yield Hit(
        f"{len(others)} token rows not emitted in normal use are untrained or low-norm{of_which}: "
        f"{'; '.join(per_side)}; e.g. {examples}",
        Location(file=w.sides[0].file, tensor=w.sides[0].stats.tensor),
        details={"count": len(others), "reserved": reserved, "ids": others[:2000]},
    )
