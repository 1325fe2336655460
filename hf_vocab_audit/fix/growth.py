"""A bound on how far ``--fix`` grows the embeddings without being asked explicitly.

The rows to add come from the checkpoint (one token id of 20 million in ``tokenizer.json`` asks for a
1.3 GB output; 2^31 for a MemoryError). Real repairs add a few rows, or round up to a multiple: past
twice the current rows or 4,194,304 rows the fix is refused with the reason, unless the user passes
``--allow-large-growth``.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import AuditError
from .repair_plan import CheckpointRepair

MAX_ROWS = 4 * 2**20  # the largest vocabularies in use are ~262k rows
SMALL_GROWTH = 1024  # rows any checkpoint may gain (tiny test models double with a few added tokens)


def check_growth(model_dir: Path, plan: CheckpointRepair) -> None:
    """Refuse a plan that grows the embeddings past the bound (see the module docstring)."""
    before, after = plan.rows_before, plan.rows_after
    if not plan.grow or before is None or after is None:
        return
    too_many = after > MAX_ROWS
    too_fast = after > 2 * before and after - before > SMALL_GROWTH
    if too_many or too_fast:
        limit = f"over {MAX_ROWS:,} rows" if too_many else "more than twice the current rows"
        raise AuditError(model_dir, f"--fix would grow the embeddings from {before:,} to {after:,} rows ({limit}), "
                                    "asked for by a token id in the tokenizer; check it, or pass "
                                    "--allow-large-growth")
