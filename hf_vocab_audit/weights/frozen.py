"""The untrained rows a PEFT adapter leaves frozen (``--weights`` with an adapter target): what the dataset scan
is told to look for, and what HVA580 reports when the data uses one of them."""

from __future__ import annotations

from ..facts.trainable_rows import FrozenRow, FrozenRows, FrozenSide, adapter_trains, trained_tokens, trains_module
from .analysis import WeightFacts
from .status import UNTRAINED
from .usage import in_normal_use

WORDS = {"zero": "is all zero", "mean": "equals the mean of the other rows (a mean resize)",
         "duplicate": "is a copy of another row", "low-norm": "has a norm far below the ordinary tokens'"}


def frozen_untrained(w: WeightFacts) -> FrozenRows | None:
    """Untrained rows no training step changes: none without an adapter (a full fine-tune trains every row).

    pad alone is left out: its row is zero by design and its positions are masked."""
    adapter = w.facts.adapter
    if adapter is None:
        return None
    tok = w.facts.tokenizer
    trained = {s.name: (trains_module(adapter, s.stats.tensor), trained_tokens(adapter, s.stats.tensor,
                                                                               s.name == "input"))
               for s in w.sides}
    rows = []
    for token_id in w.flagged_ids():
        roles = w.roles.get(token_id, [])
        if "pad" in roles and not in_normal_use(roles):
            continue
        sides = []
        for side in w.sides_with(token_id):
            whole, tokens = trained[side.name]
            if int(side.cls.status[token_id]) != UNTRAINED or whole or token_id in tokens:
                continue
            ind = side.indicators(token_id)
            reasons = [r for r in ind["reasons"] if r != "low-norm" or len(ind["reasons"]) == 1]
            what = " and ".join(WORDS.get(r, r) for r in reasons)
            sides.append(FrozenSide(side.name, side.stats.tensor, side.file,
                                    f"{what} (norm {ind['norm']:.3g}, median norm {ind['median_norm']:.3g})"))
        if sides:
            rows.append(FrozenRow(token_id, tok.id_to_token(token_id) if tok else None, tuple(roles), tuple(sides)))
    return FrozenRows(tuple(rows), adapter_trains(adapter))
