"""``check --weights``: find token rows of the embedding matrices that were never trained.

Reads only the input-embedding and (untied) lm_head matrices, memory-mapped in row chunks.
"""

from __future__ import annotations

from ..core.findings import Finding, Skipped
from ..facts import Facts
from .analysis import WeightFacts, gather_weights

__all__ = ["WeightFacts", "gather_weights", "run_weight_rules"]


def run_weight_rules(facts: Facts, rules) -> tuple[list[Finding], list[Skipped], list[str], dict | None]:
    """Run the selected ``scope="weights"`` rules: (findings, skipped, codes run, report section)."""
    chosen = [r for r in rules if r.scope == "weights"]
    if not chosen:
        return [], [], [], None
    weights, skipped = gather_weights(facts)
    if weights is None:
        reason = skipped[0].reason if skipped else "no weights"
        return [], skipped + [Skipped(f"{r.code} {r.name}", reason) for r in chosen], [], None
    findings: list[Finding] = []
    for r in chosen:
        findings.extend(r.findings(weights))
    return findings, skipped, [r.code for r in chosen], weights.summary()
