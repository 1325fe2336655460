"""Rules: pure functions of facts, registered in one table (``registry.RULES``)."""

from __future__ import annotations

import importlib

from .registry import RULES, Hit, Rule, all_rules, get_rule, rule, selected

# Modules that register rules; each extension (dataset, weights) adds its own module here.
RULE_MODULES = ("safety", "vocab", "vocab_biases", "special_tokens", "generation", "positions", "classification",
                "dataset", "dataset_alignment", "multimodal", "adapters", "weights", "batch")


def load_all() -> None:
    for name in RULE_MODULES:
        importlib.import_module(f"{__name__}.{name}")


__all__ = ["RULES", "Hit", "Rule", "all_rules", "get_rule", "load_all", "rule", "selected"]
