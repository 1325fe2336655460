"""Live ``datasets`` objects as splits: a ``Dataset``, ``DatasetDict``, ``IterableDataset`` or
``IterableDatasetDict`` passed to ``audit(datasets=[...])`` as it is in a notebook.

Each is read as Arrow batches through ``with_format("arrow").iter(batch_size)``: the rows and columns
a trainer would get, in order, so findings carry the same row numbers as the same data saved to disk. A
streaming (iterable) dataset is consumed once, batch by batch; nothing is materialised.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from .spec import Split

LIVE_TYPES = ("Dataset", "DatasetDict", "IterableDataset", "IterableDatasetDict")


def is_live(obj: Any) -> bool:
    """A ``datasets`` object (checked by class name and module: importing ``datasets`` to ask costs 1 s)."""
    return any(c.__name__ in LIVE_TYPES and c.__module__.startswith("datasets.") for c in type(obj).__mro__)


def spec_names(datasets: Iterable[Any]) -> tuple[tuple[str, ...], dict[str, Any]]:
    """The SPEC names of ``datasets`` (paths and ids as given; a live object as "<Dataset #i>") and the
    live objects by name."""
    names: list[str] = []
    live: dict[str, Any] = {}
    if isinstance(datasets, (str, Path)) or is_live(datasets):  # one dataset rather than a list of them
        datasets = [datasets]
    for i, d in enumerate(datasets):
        if isinstance(d, (str, Path)):
            names.append(str(d))
        elif is_live(d):
            name = f"<{type(d).__name__} #{i}>"
            names.append(name)
            live[name] = d
        else:
            from ..errors import AuditError

            raise AuditError(None, f"datasets[{i}]: expected a path, a Hub id or a datasets Dataset/DatasetDict/"
                                   f"IterableDataset/IterableDatasetDict, not {type(d).__name__}")
    return tuple(names), live


def _batches(ds: Any) -> Callable[[int], Iterator[pa.Table]]:
    def batches(batch_size: int) -> Iterator[pa.Table]:
        for table in ds.with_format("arrow").iter(batch_size=batch_size):
            yield table if isinstance(table, pa.Table) else pa.Table.from_batches([table])

    return batches


def live_splits(name: str, obj: Any) -> list[Split]:
    """The splits of one live object (a dict's keys name them; a lone dataset is its ``split`` or "train")."""
    if hasattr(obj, "items") and type(obj).__name__.endswith("Dict"):
        pairs = [(str(k), v) for k, v in obj.items()]
    else:
        split = getattr(obj, "split", None)
        pairs = [(str(split) if split else "train", obj)]
    out = []
    for split_name, ds in pairs:
        rows = getattr(ds, "num_rows", None)
        out.append(Split(name, split_name, getattr(ds, "features", None), rows if isinstance(rows, int) else None,
                         _batches(ds)))
    return out
