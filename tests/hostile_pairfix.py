"""``--fix`` beside ``--base BASE`` (group "pairfix"): the base is untrusted like the target; an output folder
placed inside the base is refused before anything is written (``--force`` would empty it). What ``--fix``
copies from a base, and when it refuses to, is tested in tests/fix/test_paired_edits.py (those runs write an
output folder, which this catalogue forbids next to its cases)."""

from __future__ import annotations

from pathlib import Path

from hostile_pairs import padded_base
from malformed import case

GROUP = "pairfix"


@case(GROUP, names="out")
def fix_output_inside_the_base(folder: Path) -> list[str]:
    """--output inside the --base folder: refused before --force could empty anything there."""
    base = padded_base(folder)
    return [str(folder), "--base", str(base), "--fix", "--output", str(base / "out")]
