"""Every checkpoint a target folder loads as, run through the static rules (``Facts.entry_points``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from ..facts import Facts
from ..facts.sources.folder import entry_point_findings
from .coverage import static_gaps
from .registry import Rule
from .runner import RuleRun, run_static

TOP_LEVEL = "the top-level checkpoint (what AutoModel.from_pretrained(folder) loads)"


def run_entry_points(facts: Facts, rules: Iterable[Rule], *, lines: bool = True,
                     unsupported: Mapping[str, str] | None = None) -> RuleRun:
    """The static rules on every checkpoint the target folder loads as: the sentence-transformers module and,
    beside it, the top-level checkpoint (``Facts.entry_points``). A finding in either fails; each names its
    file from the target folder, and what the top level left unexamined is a gap like the module's."""
    rules = list(rules)
    run = run_static(facts, rules, lines=lines, unsupported=unsupported)
    st = facts.sentence_transformers
    if st is None:
        return run
    target = st.modules_file.parent
    run = replace(run, findings=tuple(entry_point_findings(facts, target, list(run.findings))))
    for other in facts.entry_points:
        more = run_static(other, rules, lines=lines, unsupported=unsupported)
        gaps = tuple(replace(g, what=f"{TOP_LEVEL}: {g.what}") for g in static_gaps(other, more.skipped))
        run += RuleRun(tuple(entry_point_findings(other, target, list(more.findings))), errors=more.errors,
                       gaps=gaps)
    return run
