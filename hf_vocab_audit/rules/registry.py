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


# Modules that register rules, each with the scopes of the rules it holds (``tests/rules/test_registry.py``
# holds every module to its line). An audit imports only the modules of the scopes it runs: a plain `check DIR`
# never imports the dataset, target, GGUF or pair rules (nor the facts modules they read). A new module is one
# line here.
_S = Scope
RULE_MODULES: dict[str, frozenset[Scope]] = {
    "safety": frozenset({_S.STATIC, _S.SETTINGS}), "vocab": frozenset({_S.STATIC}),
    "vocab_biases": frozenset({_S.STATIC}), "special_tokens": frozenset({_S.STATIC}),
    "generation": frozenset({_S.STATIC}), "positions": frozenset({_S.STATIC}),
    "classification": frozenset({_S.STATIC}), "multimodal": frozenset({_S.STATIC}),
    "adapters": frozenset({_S.STATIC}), "clip_pooling": frozenset({_S.STATIC}),
    "engines": frozenset({_S.STATIC, _S.WEIGHTS, _S.TARGET}),
    "weights": frozenset({_S.WEIGHTS}), "batch": frozenset({_S.BATCH}),
    "dataset": frozenset({_S.DATASET}), "dataset_labels": frozenset({_S.DATASET}),
    "dataset_lm_labels": frozenset({_S.DATASET}), "dataset_alignment": frozenset({_S.DATASET}),
    "dataset_chat": frozenset({_S.DATASET}), "dataset_heads": frozenset({_S.DATASET}),
    "dataset_chat_content": frozenset({_S.DATASET}), "dataset_frozen": frozenset({_S.DATASET}),
    "dataset_chat_media": frozenset({_S.DATASET}),
    "gguf": frozenset({_S.GGUF, _S.GGUF_SOURCE}), "targets": frozenset({_S.TARGET}),
    "serving_chat": frozenset({_S.TARGET}), "serving_parsers": frozenset({_S.TARGET}),
    "pairs": frozenset({_S.BASE, _S.BASE_ROWS}), "drafts": frozenset({_S.DRAFT}),
    "transformers4": frozenset({_S.TARGET}),
    "gguf_chat": frozenset({_S.TARGET, _S.GGUF}),
    "gguf_stops": frozenset({_S.TARGET, _S.GGUF}),
}
_loaded: set[str] = set()


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


def load(scopes: Iterable[Scope] | None = None) -> None:
    """Import the rule modules (each registers its rules) that hold rules of ``scopes`` (None: every module).
    The weights rules import numpy only when run."""
    wanted = None if scopes is None else frozenset(scopes)
    for name, held in RULE_MODULES.items():
        if name not in _loaded and (wanted is None or held & wanted):
            importlib.import_module(f"{__package__}.{name}")
            _loaded.add(name)


def load_all() -> None:
    """Import every rule module."""
    load(None)


def all_rules() -> list[Rule]:
    load_all()
    return [RULES[c] for c in sorted(RULES)]


def get_rule(code_or_name: str) -> Rule | None:
    """The rule of a code or name: looked up among the rules loaded so far, then among all of them."""
    for attempt in range(2):
        found = RULES.get(code_or_name.upper()) or next((r for r in RULES.values() if r.name == code_or_name), None)
        if found is not None or attempt:
            return found
        load_all()
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


def selected(select: Iterable[str] | None = None, ignore: Iterable[str] | None = None,
             scopes: Iterable[Scope] | None = None) -> list[Rule]:
    """Rules chosen by ``select`` (default all) minus ``ignore``: codes, prefixes (``HVA1``) or names; with
    ``scopes``, only the rules of those scopes (and only their modules are imported, unless a selector needs
    every rule to be validated against).

    Raises :class:`AuditError` naming an unknown selector, TypeError for a bare string.
    """
    sel = parse_selectors(select, "select")
    ign = parse_selectors(ignore, "ignore")
    if scopes is None:
        rules = all_rules()
    else:
        wanted = frozenset(scopes)
        load(wanted)
        rules = [RULES[c] for c in sorted(RULES) if RULES[c].scope in wanted]
    if sel and not any(s.upper() == "ALL" for s in sel):
        rules = [r for r in rules if any(_matches(r, s) for s in sel)]
    return [r for r in rules if not any(_matches(r, s) for s in ign)]
