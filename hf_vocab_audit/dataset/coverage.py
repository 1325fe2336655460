"""What a dataset scan covered, per split, and the data the model reads that it did not check.

Fail closed: a split with no checked column, a column the model or trainer reads by its name that was not
checked, and a classification head's split with no label column while columns were left without a role
are gaps (exit 2 unless ``--allow-partial``), not notes.
"""

from __future__ import annotations

from ..core.coverage import ColumnCoverage, Gap, SplitCoverage
from .checks import CHAT_NOT_RENDERED, LABEL_ROLES, TEXT
from .roles import LABEL_NAMES, NO_RANGE_REASONS, TRAINER_NAMES, id_role
from .scan import DatasetFacts, SplitScan


def _reads(name: str) -> bool:
    """Whether a model or trainer reads a column of this name (ids, labels, chat turns)."""
    return id_role(name) is not None or name in LABEL_NAMES or name in TRAINER_NAMES


def _split_gaps(df: DatasetFacts, s: SplitScan) -> list[Gap]:
    where = f"dataset {s.source} split {s.split!r}"
    read = [(c, r) for c, r in s.skipped if _reads(c) and r not in NO_RANGE_REASONS]
    gaps = [Gap(f"{where} column {c!r}", r) for c, r in read]
    if not s.columns and s.rows and not read:
        problems = getattr(s, "chat_problems", ())
        if problems:  # a chat split whose rows could not be rendered (no template): the finding says why
            gaps.append(Gap(f"{where}: no column", f"the {s.format or 'chat'} rows could not be rendered: "
                            f"{problems[0][1]}"))
        else:
            left = ", ".join(repr(c) for c, _ in s.skipped) or "none"
            unread = "".join(f"; {u.column!r}: {u.reason}" for u in s.unchecked)  # HVA530 says more
            gaps.append(Gap(f"{where}: no column", f"no column could be checked (columns without a role: {left}"
                            f"{unread})", hint="name the columns with --text-column / --label-column"))
    elif df.head == "classification" and not any(p.role in LABEL_ROLES for p in s.columns) and not any(
        r in NO_RANGE_REASONS for _, r in s.skipped  # float labels (regression, multi-label): taken, no range
    ):
        candidates = [c for c, r in s.skipped if (c, r) not in read]
        if candidates:
            names = ", ".join(repr(c) for c in candidates)
            gaps.append(Gap(f"{where} labels", f"the classification head reads labels, but no column was taken as "
                            f"labels (columns without a role: {names})",
                            hint=f"pass --label-column {candidates[0]} if it holds the classes"))
    spent = next((v for key, v in df.summary.violations.items()
                  if key[:2] == (s.source, s.split) and key[3] == CHAT_NOT_RENDERED), None)
    if spent is not None:  # fail closed: the rows past the split's rendering budget were not checked
        gaps.append(Gap(f"{where}: rows from {spent.locations[0][0]}", f"{spent.rows:,} rows were not rendered: the "
                        "chat template spent the split's rendering budget (HVA555 names the rows over their own)"))
    return gaps


def _columns(df: DatasetFacts, s: SplitScan) -> tuple[ColumnCoverage, ...]:
    out = []
    for p in s.columns:
        stats = df.summary.stats.get((s.source, s.split, p.name))
        if stats is None:
            continue
        out.append(ColumnCoverage(p.name, p.role, stats.rows, stats.tokens if p.role == TEXT else stats.values))
    return tuple(out)


def dataset_coverage(df: DatasetFacts) -> tuple[tuple[SplitCoverage, ...], list[Gap]]:
    """Each split as scanned (rows, columns with their roles and values, columns left alone) and the gaps."""
    splits, gaps = [], []
    for s in df.splits:
        not_checked = tuple((u.column, u.reason) for u in s.unchecked) + tuple(s.skipped)
        splits.append(SplitCoverage(s.source, s.split, s.rows, s.truncated, _columns(df, s), not_checked,
                                    getattr(s, "format", None)))
        gaps += _split_gaps(df, s)
    return tuple(splits), gaps
