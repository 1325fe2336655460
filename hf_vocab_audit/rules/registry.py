"""The rule registry: one table of every rule, with selection by code or prefix."""

from __future__ import annotations

import importlib
import inspect
import itertools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..core.findings import Finding, Location, Severity
from ..core.fixes import Fix, FixAvailability
from ..core.scope import Scope
from ..errors import AuditError
from ..facts.requirements import Requirement

CODE_RE = re.compile(r"^HVA\d{3}$")
MAX_FINDINGS_PER_RULE = 200  # listed one by one; the rest of a rule's hits are counted in one more finding
NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


# Modules that register rules; each extension (dataset, weights) adds its own module here.
RULE_MODULES = ("safety", "vocab", "vocab_biases", "special_tokens", "generation", "positions", "classification",
                "dataset", "dataset_labels", "dataset_lm_labels", "dataset_alignment", "multimodal", "adapters",
                "weights", "batch", "dataset_chat", "gguf", "targets", "dataset_heads", "serving_chat",
                "dataset_chat_content", "dataset_frozen", "dataset_chat_media", "clip_pooling", "pairs",
                "drafts", "engines", "serving_parsers", "transformers4")


@dataclass(frozen=True)
class Hit:
    """What a rule's check yields; the registry turns it into a :class:`Finding`."""

    message: str
    location: Location = field(default_factory=Location)
    hint: str | None = None
    fix: Fix | None = None
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    severity: Severity
    scope: Scope
    summary: str
    why: str
    how_to_fix: str
    requires: tuple[Requirement, ...]
    check: Callable[..., Iterable[Hit]] = field(repr=False, compare=False)
    # whether its findings can carry a fix (ruff's FIX_AVAILABILITY); tests/rules/test_fix_availability.py
    # holds every rule to it
    fix_availability: FixAvailability = FixAvailability.NEVER

    def findings(self, facts: Any) -> list[Finding]:
        """The first :data:`MAX_FINDINGS_PER_RULE` hits, then one finding counting the rest: a hostile
        input (a chat template with 500,000 distinct markers) must not make a report of 500,000 lines."""
        hits = iter(self.check(facts))
        out = [self.finding(hit) for hit in itertools.islice(hits, MAX_FINDINGS_PER_RULE)]
        more = sum(1 for _ in hits)
        if more:
            out.append(self.finding(Hit(f"{more} more finding(s) of this rule not listed (the first "
                                        f"{MAX_FINDINGS_PER_RULE} are)", details={"not_listed": more})))
        return out

    def finding(self, hit: Hit) -> Finding:
        return Finding(
            code=self.code,
            name=self.name,
            severity=self.severity,
            message=hit.message,
            location=hit.location,
            hint=hit.hint or " ".join(self.how_to_fix.split("\n\n")[0].split()),
            fix=hit.fix,
            details=hit.details,
        )

    def explain(self) -> str:
        return (
            f"{self.code} {self.name} ({self.severity.value})\n\n{self.summary}\n\n"
            f"Why it matters:\n{self.why}\n\nHow to fix:\n{self.how_to_fix}\n"
        )


RULES: dict[str, Rule] = {}


def _sections(doc: str) -> tuple[str, str, str]:
    """Split a rule docstring into summary, ``Why:`` and ``Fix:`` parts."""
    text = inspect.cleandoc(doc)
    summary, _, rest = text.partition("\n\nWhy:")
    why, _, fix = rest.partition("\n\nFix:")
    return " ".join(summary.split()), inspect.cleandoc(why), inspect.cleandoc(fix)


def rule(code: str, name: str, severity: Severity, *, requires: tuple[Requirement, ...] = (),
         scope: Scope = Scope.STATIC, fix: FixAvailability = FixAvailability.NEVER,
         ) -> Callable[[Callable[..., Iterable[Hit]]], Callable[..., Iterable[Hit]]]:
    """Register a check. Its docstring is the rule's doc: a summary, then ``Why:`` and ``Fix:``.
    ``fix``: whether its findings can carry a machine-applicable :class:`Fix` (never, sometimes, always)."""

    def register(check: Callable[..., Iterable[Hit]]) -> Callable[..., Iterable[Hit]]:
        if not CODE_RE.match(code) or not NAME_RE.match(name):
            raise ValueError(f"bad rule code or name: {code} {name}")
        if code in RULES:
            raise ValueError(f"duplicate rule code {code}")
        if any(r.name == name for r in RULES.values()):
            raise ValueError(f"duplicate rule name {name}")
        summary, why, how = _sections(check.__doc__ or "")
        if not (summary and why and how):
            raise ValueError(f"{code}: the docstring needs a summary, 'Why:' and 'Fix:'")
        RULES[code] = Rule(code, name, severity, Scope(scope), summary, why, how, tuple(map(Requirement, requires)),
                           check, FixAvailability(fix))
        return check

    return register


def load_all() -> None:
    """Import every rule module (each registers its rules); the weights rules import numpy only when run."""
    for name in RULE_MODULES:
        importlib.import_module(f"{__package__}.{name}")


def all_rules() -> list[Rule]:
    load_all()
    return [RULES[c] for c in sorted(RULES)]


def get_rule(code_or_name: str) -> Rule | None:
    for r in all_rules():
        if code_or_name.upper() == r.code or code_or_name == r.name:
            return r
    return None


def _matches(r: Rule, selector: str) -> bool:
    return r.code.startswith(selector.upper()) or r.name == selector


def validate_selectors(selectors: Iterable[str]) -> list[str]:
    """Selectors that match no rule (for a one-line error naming them)."""
    selectors = list(selectors)
    if not selectors:
        return []  # nothing to check: the rule modules are not imported for it
    rules = all_rules()
    return [s for s in selectors if s.upper() != "ALL" and not any(_matches(r, s) for r in rules)]


def parse_selectors(value: Iterable[str] | None, option: str = "select") -> tuple[str, ...]:
    """``value`` as rule selectors: a bare string is refused (it would select by its characters), an
    unknown code or name is an :class:`AuditError` naming it; empty strings are dropped."""
    if value is None:
        return ()
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{option} must be a list of rule codes, prefixes or names, not the string {value!r}: "
                        f"write [{value!r}]")
    items = tuple(value)
    wrong = [s for s in items if not isinstance(s, str)]
    if wrong:
        raise TypeError(f"{option}: rule selectors are strings, not {wrong[0]!r}")
    items = tuple(s for s in items if s)
    unknown = validate_selectors(items)
    if unknown:
        raise AuditError(None, f"unknown rule code or name: {', '.join(unknown)} (see `hf-vocab-audit rules`)")
    return items


def selected(select: Iterable[str] | None = None, ignore: Iterable[str] | None = None) -> list[Rule]:
    """Rules chosen by ``select`` (default all) minus ``ignore``: codes, prefixes (``HVA1``) or names.

    Raises :class:`AuditError` naming an unknown selector, TypeError for a bare string.
    """
    sel = parse_selectors(select, "select")
    ign = parse_selectors(ignore, "ignore")
    rules = all_rules()
    if sel and not any(s.upper() == "ALL" for s in sel):
        rules = [r for r in rules if any(_matches(r, s) for s in sel)]
    return [r for r in rules if not any(_matches(r, s) for s in ign)]
