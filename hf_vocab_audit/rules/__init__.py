"""Rules: pure functions of facts, registered in one table (``registry.RULES``), run by ``runner``."""

from __future__ import annotations

from .registry import RULE_MODULES, RULES, Hit, Rule, Scope, all_rules, get_rule, load_all, rule, selected

__all__ = ["RULES", "RULE_MODULES", "Hit", "Rule", "Scope", "all_rules", "get_rule", "load_all", "rule", "selected"]
