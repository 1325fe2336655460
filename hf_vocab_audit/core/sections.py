"""The report's optional sections: the dataset scan (``--dataset``), the embedding row statistics
(``--weights``) and what ``--target vllm`` says to suppress, as frozen data with a JSON form.

They live in the report model, not in the layers that fill them (``dataset/report.py``,
``weights/analysis.py``, ``audit.py``), so that a renderer reads typed fields of a report alone, a report
read back from its JSON is the report it was (``DatasetSection.from_dict(s.to_dict()) == s``), and
``reports/schema/report.schema.json`` describes exactly what ``to_dict`` writes. Each ``to_dict`` writes its
keys in the order the JSON has always had, so the JSON stays byte for byte what it was.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MAX_PREVIEW_ROWS = 20  # --show-mask N: at most this many rows per split
MAX_PREVIEW_TOKENS = 2000  # tokens shown per previewed sequence
# ---- dataset (``--dataset``) ------------------------------------------------------------------------


@dataclass(frozen=True)
class Histogram:
    """Fixed-edge counts against a limit (embedding rows, usable positions), for the HTML plots; the last,
    open-ended bin closes at the largest value seen."""

    limit: int
    edges: tuple[float, ...]
    counts: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"limit": self.limit, "edges": list(self.edges), "counts": list(self.counts)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Histogram:
        return cls(d["limit"], tuple(d["edges"]), tuple(d["counts"]))


@dataclass(frozen=True)
class ValueCount:
    """One distinct value of a label column and how many rows hold it."""

    value: Any  # an int, str, float or bool, as the data holds it
    count: int

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "count": self.count}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ValueCount:
        return cls(d["value"], d["count"])


@dataclass(frozen=True)
class LabelValues:
    """The distinct values of a class-label column: listed (``values``, ``count`` of them), or, past the
    tracking cap, not listed (``values`` None and ``note`` saying why)."""

    count: int | None
    values: tuple[ValueCount, ...] | None
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        if self.values is None:
            return {"unique_values": None, "unique_note": self.note}
        return {"unique_count": self.count, "unique_values": [v.to_dict() for v in self.values]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LabelValues | None:
        if "unique_values" not in d:
            return None
        values = d["unique_values"]
        if values is None:
            return cls(None, None, d.get("unique_note"))
        return cls(d.get("unique_count"), tuple(ValueCount.from_dict(v) for v in values))


@dataclass(frozen=True)
class ColumnSection:
    """What the scan saw in one column: counts, range, and (by role) tokens, histograms, label values."""

    role: str
    rows: int
    values: int
    nulls: int
    min: Any  # the smallest value (an id, a label, a string label), None when the column had none
    max: Any
    max_length: int | None = None  # longest sequence (id and text columns)
    tokens: int | None = None  # tokens checked (text and chat columns)
    id_histogram: Histogram | None = None
    length_histogram: Histogram | None = None
    labels: LabelValues | None = None  # class-label columns

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "rows": self.rows, "values": self.values, "nulls": self.nulls,
                               "min": self.min, "max": self.max}
        if self.max_length is not None:
            out["max_length"] = self.max_length
        if self.tokens is not None:
            out["tokens"] = self.tokens
        if self.id_histogram is not None:
            out["id_histogram"] = self.id_histogram.to_dict()
        if self.length_histogram is not None:
            out["length_histogram"] = self.length_histogram.to_dict()
        if self.labels is not None:
            out.update(self.labels.to_dict())
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ColumnSection:
        ids, lengths = d.get("id_histogram"), d.get("length_histogram")
        return cls(d["role"], d["rows"], d["values"], d["nulls"], d.get("min"), d.get("max"), d.get("max_length"),
                   d.get("tokens"), Histogram.from_dict(ids) if ids else None,
                   Histogram.from_dict(lengths) if lengths else None, LabelValues.from_dict(d))


@dataclass(frozen=True)
class UncheckedColumn:
    """A column with a role whose check could not run, and why."""

    column: str
    role: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"column": self.column, "role": self.role, "reason": self.reason}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> UncheckedColumn:
        return cls(d["column"], d["role"], d["reason"])


@dataclass(frozen=True)
class PreviewToken:
    """One token of a previewed row: its text (untrusted: every renderer escapes it), its id, and whether the
    trainer computes a loss on it (its label is not -100)."""

    text: str
    id: int
    trained: bool

    def to_dict(self) -> list[Any]:
        return [self.text, self.id, self.trained]  # compact: a row holds up to MAX_PREVIEW_TOKENS of them

    @classmethod
    def from_dict(cls, d: list[Any]) -> PreviewToken:
        return cls(d[0], d[1], d[2])


@dataclass(frozen=True)
class PreviewRow:
    """One rendered sequence of a row (``messages``, ``completion``, ``chosen``, ``rejected``) as the trainer
    gets it, token by token (the first ``MAX_PREVIEW_TOKENS``: ``length`` says how many there are), or why it
    has none (the template refused the row, or it was not tokenized)."""

    row: int
    sequence: str
    tokens: tuple[PreviewToken, ...]
    length: int  # tokens of the sequence after truncation (more than ``tokens`` holds when capped)
    truncated_from: int = 0  # the length before the trainer's truncation (0: not truncated)
    dropped: bool = False  # the trainer drops the row (no token left with a loss after truncation)
    problem: str | None = None  # why the row has no tokens to show

    def facts(self) -> list[str]:
        """What a renderer says of the row before its tokens ("64 tokens", "12 with a loss", ...)."""
        out = [f"{self.length} tokens"]
        if self.tokens:
            out.append(f"{sum(t.trained for t in self.tokens)} with a loss")
        if len(self.tokens) < self.length:
            out.append(f"the first {len(self.tokens)} shown")
        if self.truncated_from:
            out.append(f"truncated from {self.truncated_from}")
        if self.dropped:
            out.append("dropped by the trainer: no token left with a loss")
        return out

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"row": self.row, "sequence": self.sequence, "length": self.length,
                               "tokens": [t.to_dict() for t in self.tokens]}
        if self.truncated_from:
            out["truncated_from"] = self.truncated_from
        if self.dropped:
            out["dropped"] = True
        if self.problem is not None:
            out["problem"] = self.problem
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PreviewRow:
        return cls(d["row"], d["sequence"], tuple(PreviewToken.from_dict(t) for t in d.get("tokens", ())),
                   d["length"], d.get("truncated_from", 0), bool(d.get("dropped", False)), d.get("problem"))


@dataclass(frozen=True)
class MaskPreview:
    """``--show-mask N``: the first rows of a chat/instruction split with the tokens the trainer computes a
    loss on marked, under the settings the split was rendered with; or, when none can be shown, why."""

    rows: tuple[PreviewRow, ...]
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"rows": [r.to_dict() for r in self.rows]}
        if self.note is not None:
            out["note"] = self.note
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> MaskPreview:
        return cls(tuple(PreviewRow.from_dict(r) for r in d.get("rows", ())), d.get("note"))


@dataclass(frozen=True)
class SplitSection:
    """One split of one dataset source: its rows, its columns by name (in scan order), the columns left
    unchecked or without a role, and for a chat/instruction split the format read and the trainer settings."""

    source: str
    split: str
    rows: int
    truncated: bool
    columns: dict[str, ColumnSection]
    unchecked: tuple[UncheckedColumn, ...] = ()
    skipped_columns: tuple[tuple[str, str], ...] = ()  # (column, reason): no role
    format: str | None = None
    chat_settings: str | None = None  # where the trainer settings came from and what they are
    mask_preview: MaskPreview | None = None  # --show-mask

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "source": self.source, "split": self.split, "rows": self.rows, "truncated": self.truncated,
            "columns": {name: c.to_dict() for name, c in self.columns.items()},
            "unchecked": [u.to_dict() for u in self.unchecked],
            "skipped_columns": [{"column": c, "reason": r} for c, r in self.skipped_columns],
        }
        if self.format is not None:
            out["format"] = self.format
            out["chat_settings"] = self.chat_settings
        if self.mask_preview is not None:
            out["mask_preview"] = self.mask_preview.to_dict()
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SplitSection:
        return cls(d["source"], d["split"], d["rows"], d["truncated"],
                   {name: ColumnSection.from_dict(c) for name, c in d.get("columns", {}).items()},
                   tuple(UncheckedColumn.from_dict(u) for u in d.get("unchecked", ())),
                   tuple((s["column"], s["reason"]) for s in d.get("skipped_columns", ())),
                   d.get("format"), d.get("chat_settings"),
                   MaskPreview.from_dict(d["mask_preview"]) if d.get("mask_preview") is not None else None)


@dataclass(frozen=True)
class DatasetSection:
    """The ``dataset`` section: the specs asked for, the rows scanned and how long it took, the model's
    limits the data was checked against, and one entry per split."""

    specs: tuple[str, ...]
    rows_scanned: int
    seconds: float
    limits: dict[str, int | None]  # the dataset kernel's limits by name (None: not known, not checked)
    num_labels_source: str | None
    splits: tuple[SplitSection, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"specs": list(self.specs), "rows_scanned": self.rows_scanned, "seconds": self.seconds,
                "limits": dict(self.limits), "num_labels_source": self.num_labels_source,
                "splits": [s.to_dict() for s in self.splits]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> DatasetSection:
        return cls(tuple(d.get("specs", ())), d["rows_scanned"], d["seconds"], dict(d.get("limits") or {}),
                   d.get("num_labels_source"), tuple(SplitSection.from_dict(s) for s in d.get("splits", ())))

    def split(self, name: str) -> SplitSection:
        """The first split of that name (KeyError when none)."""
        for s in self.splits:
            if s.split == name:
                return s
        raise KeyError(name)


# ---- weights (``--weights``) ------------------------------------------------------------------------


@dataclass(frozen=True)
class FlaggedRow:
    """An untrained or suspect row of a token in normal use, with the indicators that flagged it."""

    id: int
    token: str | None
    roles: tuple[str, ...]
    status: str
    reasons: tuple[str, ...]
    norm: float
    max_abs: float
    duplicate_of: int | None
    median_norm: float

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "token": self.token, "roles": list(self.roles), "status": self.status,
                "reasons": list(self.reasons), "norm": self.norm, "max_abs": self.max_abs,
                "duplicate_of": self.duplicate_of, "median_norm": self.median_norm}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> FlaggedRow:
        return cls(d["id"], d.get("token"), tuple(d.get("roles", ())), d["status"], tuple(d.get("reasons", ())),
                   d["norm"], d["max_abs"], d.get("duplicate_of"), d["median_norm"])


@dataclass(frozen=True)
class NormHistogram:
    """Row norms on log-spaced bins, counted per kind of row (ordinary, added, padding, untrained, suspect);
    all-zero rows apart, since a log axis cannot show them."""

    edges: tuple[float, ...]
    counts: dict[str, tuple[int, ...]]
    zero_rows: dict[str, int]
    threshold_norm: float | None
    median_norm: float

    def to_dict(self) -> dict[str, Any]:
        return {"edges": list(self.edges), "counts": {k: list(v) for k, v in self.counts.items()},
                "zero_rows": dict(self.zero_rows), "threshold_norm": self.threshold_norm,
                "median_norm": self.median_norm}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> NormHistogram:
        return cls(tuple(d["edges"]), {k: tuple(v) for k, v in d["counts"].items()}, dict(d["zero_rows"]),
                   d.get("threshold_norm"), d["median_norm"])


@dataclass(frozen=True)
class WeightSide:
    """One embedding matrix (``input``, or an untied ``output``): its shape, row counts by status, norms,
    the flagged rows of tokens in normal use and the other flagged ids (each list capped)."""

    tensor: str
    file: str
    dtype: str
    rows: int
    cols: int
    token_rows: int
    padding_rows: int
    counts: dict[str, int]  # rows by status (trained, untrained, suspect)
    median_norm: float
    mean_row_norm: float
    threshold_norm: float | None
    flagged_used: tuple[FlaggedRow, ...]
    flagged_other_ids: tuple[int, ...]
    histogram: NormHistogram

    def to_dict(self) -> dict[str, Any]:
        return {"tensor": self.tensor, "file": self.file, "dtype": self.dtype, "rows": self.rows, "cols": self.cols,
                "token_rows": self.token_rows, "padding_rows": self.padding_rows, "counts": dict(self.counts),
                "median_norm": self.median_norm, "mean_row_norm": self.mean_row_norm,
                "threshold_norm": self.threshold_norm, "flagged_used": [r.to_dict() for r in self.flagged_used],
                "flagged_other_ids": list(self.flagged_other_ids), "histogram": self.histogram.to_dict()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> WeightSide:
        return cls(d["tensor"], d["file"], d["dtype"], d["rows"], d["cols"], d["token_rows"], d["padding_rows"],
                   dict(d["counts"]), d["median_norm"], d["mean_row_norm"], d.get("threshold_norm"),
                   tuple(FlaggedRow.from_dict(r) for r in d.get("flagged_used", ())),
                   tuple(d.get("flagged_other_ids", ())), NormHistogram.from_dict(d["histogram"]))


@dataclass(frozen=True)
class WeightsSection:
    """The ``weights`` section: tied or not, the classification thresholds, and each matrix by side."""

    tied: bool
    thresholds: dict[str, float]  # zero_max_abs, suspect_z, suspect_ratio
    sides: dict[str, WeightSide]

    def to_dict(self) -> dict[str, Any]:
        return {"tied": self.tied, "thresholds": dict(self.thresholds),
                "sides": {name: s.to_dict() for name, s in self.sides.items()}}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> WeightsSection:
        return cls(d["tied"], dict(d["thresholds"]), {n: WeightSide.from_dict(s) for n, s in d["sides"].items()})


# ---- --target vllm ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class VllmSection:
    """The ids a serving engine should never sample (undecodable ones; with ``--weights``, also untrained
    rows of reserved tokens, listed again apart): a logits processor's or ``bad_words_ids``' input."""

    suppress_token_ids: tuple[int, ...]
    untrained_reserved_ids: tuple[int, ...] | None = None  # None: the weights were not read

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"suppress_token_ids": list(self.suppress_token_ids)}
        if self.untrained_reserved_ids is not None:
            out["untrained_reserved_ids"] = list(self.untrained_reserved_ids)
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> VllmSection:
        reserved = d.get("untrained_reserved_ids")
        return cls(tuple(d.get("suppress_token_ids", ())), tuple(reserved) if reserved is not None else None)
