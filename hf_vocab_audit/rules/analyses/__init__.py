"""The analyses one audit may add to the static rules: ``--weights``, ``--dataset``, ``--target``, a GGUF's
``--source``, and a pair of artifacts (``--base`` beside a full checkpoint, ``--draft``), each one :class:`Analysis`.

An analysis says whether the options ask for it (``wanted``), which rule scope it feeds (``scope``: a source
that cannot feed it has its rules skipped, with the source's reason, ``FactsSource.cannot``), whether its
findings lie in the target's files (``located``: then the source's locator places them, ``rules.locators``),
and runs (``run``) into one typed :class:`AnalysisResult`: the rules it ran, the report sections it fills, the
dataset splits it covered and the gaps it left. An analysis reads what the ones before it found through
:meth:`AuditContext.found` (the dataset scan and ``--target vllm`` read the ``--weights`` result). The analyses
are listed once, in :mod:`.registry`; a new one is a class and one line in ``ANALYSES``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from ...core.coverage import Gap, SplitCoverage
from ...core.options import AuditOptions
from ...core.scope import Scope
from ...facts import Facts
from ..registry import Rule
from ..runner import RuleRun

if TYPE_CHECKING:
    from ...core.sections import DatasetSection, VllmSection, WeightsSection


@dataclass(frozen=True)
class Sections:
    """The report sections an audit fills: ``Report``'s typed optional sections (``core.report.SECTIONS``, one
    field each, same name) and extension sections by their JSON key (``Report.extra``)."""

    weights: WeightsSection | None = None
    dataset: DatasetSection | None = None
    vllm: VllmSection | None = None
    gguf_source: str | None = None  # a GGUF audit's --source folder
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __or__(self, other: Sections) -> Sections:
        """Both sets of sections; a section ``other`` fills replaces this one's."""
        typed = {f.name: getattr(other, f.name) if getattr(other, f.name) is not None else getattr(self, f.name)
                 for f in fields(self) if f.name != "extra"}
        return Sections(**typed, extra={**self.extra, **other.extra})

    def report_fields(self) -> dict[str, Any]:
        """The ``Report`` keywords: each typed section filled, and ``extra``."""
        typed = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "extra"}
        return {**{k: v for k, v in typed.items() if v is not None}, "extra": dict(self.extra)}


@dataclass(frozen=True)
class AnalysisResult:
    """What one analysis gives the report: the rules it ran (findings, skipped work, errors), its sections,
    the dataset splits it covered and what it left unexamined (coverage gaps)."""

    run: RuleRun = RuleRun()
    sections: Sections = Sections()
    splits: tuple[SplitCoverage, ...] = ()
    gaps: tuple[Gap, ...] = ()


R = TypeVar("R", bound=AnalysisResult)


@dataclass
class AuditContext:
    """One audit as the analyses see it: the facts, the selected rules, the options and the results so far."""

    facts: Facts
    rules: list[Rule]
    options: AuditOptions
    results: list[AnalysisResult] = field(default_factory=list)

    def found(self, kind: type[R]) -> R | None:
        """The result of the earlier analysis that returns ``kind``, or None when it did not run."""
        return next((r for r in self.results if isinstance(r, kind)), None)


class Analysis(ABC):
    """One extension of the audit (``--weights``, ``--dataset``, ``--target``, a GGUF's ``--source``)."""

    name: ClassVar[str]
    scope: ClassVar[Scope | None]  # the rules it runs (None: none of its own, only sections and gaps)
    located: ClassVar[bool] = True  # its findings lie in the target's files: the source's locator places them

    @abstractmethod
    def wanted(self, options: AuditOptions) -> bool:
        """Whether ``options`` ask for this analysis."""

    @abstractmethod
    def run(self, ctx: AuditContext) -> AnalysisResult:
        """Run it on ``ctx.facts``: the rules of ``scope`` among ``ctx.rules``, its sections, its gaps."""


__all__ = ["Analysis", "AnalysisResult", "AuditContext", "Sections"]
