"""``--dataset`` in one call: the scan and everything the audit needs of it afterwards (its report section, the
work it skipped, the splits it covered and the gaps), so that the audit never calls back into the dataset
package once the scan is done."""

from __future__ import annotations

from dataclasses import dataclass

from ..core.coverage import Gap, SplitCoverage
from ..core.findings import Skipped
from ..core.options import ScanOptions
from ..core.sections import DatasetSection
from ..facts import Facts
from ..facts.trainable_rows import FrozenRows
from .coverage import dataset_coverage
from .engines.registry import scan
from .report import dataset_section, skipped_work
from .scan import DatasetFacts


@dataclass(frozen=True)
class ScanOutcome:
    """One finished scan: what the dataset rules read (``facts``) and what the report takes of it."""

    facts: DatasetFacts
    section: DatasetSection
    skipped: tuple[Skipped, ...]  # columns without a role, checks whose limit is unknown
    splits: tuple[SplitCoverage, ...]
    gaps: tuple[Gap, ...]  # data the model reads left unchecked


def scan_dataset(facts: Facts, options: ScanOptions, frozen: FrozenRows | None = None) -> ScanOutcome:
    """Scan ``options.specs`` against ``facts``' model (``frozen``: untrained rows the scan counts, HVA580)."""
    df = scan(facts, options, frozen)
    splits, gaps = dataset_coverage(df)
    return ScanOutcome(df, dataset_section(df, options.specs), tuple(skipped_work(df)), tuple(splits), tuple(gaps))


__all__ = ["ScanOutcome", "scan_dataset"]
