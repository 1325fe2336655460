"""The report's optional sections: the dataset scan (``--dataset``), the embedding row statistics
(``--weights``) and what ``--target vllm`` says to suppress, as frozen data with a JSON form.

They live in the report model, not in the layers that fill them (``dataset/report.py``,
``weights/analysis.py``, ``audit.py``), so that a renderer reads typed fields of a report alone, a report
read back from its JSON is the report it was (``DatasetSection.from_dict(s.to_dict()) == s``), and
``reports/schema/report.schema.json`` describes exactly what ``to_dict`` writes. The JSON form is the
codec's (``core.codec``): where it is not the plain walk of the fields (a key left out when empty, the label
values written into their column, a token as a compact array), the field or the class says so, and the keys
keep the order the JSON has always had, so the JSON stays byte for byte what it was.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .codec import JsonForm, Shape, if_empty, if_none, unless, wire

MAX_PREVIEW_ROWS = 20  # --show-mask N: at most this many rows per split
MAX_PREVIEW_TOKENS = 2000  # tokens shown per previewed sequence
# ---- dataset (``--dataset``) ------------------------------------------------------------------------


@dataclass(frozen=True)
class Histogram(JsonForm):
    """Fixed-edge counts against a limit (embedding rows, usable positions), for the HTML plots; the last,
    open-ended bin closes at the largest value seen."""

    limit: int
    edges: tuple[float, ...]
    counts: tuple[int, ...]


@dataclass(frozen=True)
class ValueCount(JsonForm):
    """One distinct value of a label column and how many rows hold it."""

    value: Any  # an int, str, float or bool, as the data holds it
    count: int


@dataclass(frozen=True)
class LabelValues(JsonForm):
    """The distinct values of a class-label column: listed (``values``, ``count`` of them), or, past the
    tracking cap, not listed (``values`` None and ``note`` saying why)."""

    count: int | None = field(default=None, metadata=wire(key="unique_count", omit=if_none))
    values: tuple[ValueCount, ...] | None = field(default=None, metadata=wire(key="unique_values"))
    note: str | None = field(default=None, metadata=wire(key="unique_note", omit=if_none))


@dataclass(frozen=True)
class ColumnSection(JsonForm):
    """What the scan saw in one column: counts, range, and (by role) tokens, histograms, label values."""

    role: str
    rows: int
    values: int
    nulls: int
    min: Any  # the smallest value (an id, a label, a string label), None when the column had none
    max: Any
    max_length: int | None = field(default=None, metadata=wire(omit=if_none))  # longest sequence (id and text columns)
    tokens: int | None = field(default=None, metadata=wire(omit=if_none))  # tokens checked (text and chat columns)
    id_histogram: Histogram | None = field(default=None, metadata=wire(omit=if_none))
    length_histogram: Histogram | None = field(default=None, metadata=wire(omit=if_none))
    # class-label columns: written into the column's object (unique_count, unique_values, unique_note)
    labels: LabelValues | None = field(default=None, metadata=wire(flatten=True))


@dataclass(frozen=True)
class UncheckedColumn(JsonForm):
    """A column with a role whose check could not run, and why."""

    column: str
    role: str
    reason: str


@dataclass(frozen=True)
class PreviewToken:
    """One token of a previewed row: its text (untrusted: every renderer escapes it), its id, and whether the
    trainer computes a loss on it (its label is not -100)."""

    text: str
    id: int
    trained: bool
    _codec = Shape(positional=True)  # [text, id, trained]: a row holds up to MAX_PREVIEW_TOKENS of them


@dataclass(frozen=True)
class PreviewRow(JsonForm):
    """One rendered sequence of a row (``messages``, ``completion``, ``chosen``, ``rejected``) as the trainer
    gets it, token by token (the first ``MAX_PREVIEW_TOKENS``: ``length`` says how many there are), or why it
    has none (the template refused the row, or it was not tokenized)."""

    row: int
    sequence: str
    tokens: tuple[PreviewToken, ...]
    length: int  # tokens of the sequence after truncation (more than ``tokens`` holds when capped)
    # the length before the trainer's truncation (0: not truncated)
    truncated_from: int = field(default=0, metadata=wire(omit=if_empty))
    # the trainer drops the row (no token left with a loss after truncation)
    dropped: bool = field(default=False, metadata=wire(omit=if_empty))
    problem: str | None = field(default=None, metadata=wire(omit=if_none))  # why the row has no tokens to show
    _codec = Shape(order=("row", "sequence", "length", "tokens", "truncated_from", "dropped", "problem"))

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


@dataclass(frozen=True)
class MaskPreview(JsonForm):
    """``--show-mask N``: the first rows of a chat/instruction split with the tokens the trainer computes a
    loss on marked, under the settings the split was rendered with; or, when none can be shown, why."""

    rows: tuple[PreviewRow, ...]
    note: str | None = field(default=None, metadata=wire(omit=if_none))


@dataclass(frozen=True)
class SplitSection(JsonForm):
    """One split of one dataset source: its rows, its columns by name (in scan order), the columns left
    unchecked or without a role, and for a chat/instruction split the format read and the trainer settings."""

    source: str
    split: str
    rows: int
    truncated: bool
    columns: dict[str, ColumnSection]
    unchecked: tuple[UncheckedColumn, ...] = ()
    # (column, reason): no role
    skipped_columns: tuple[tuple[str, str], ...] = field(default=(), metadata=wire(record=("column", "reason")))
    format: str | None = field(default=None, metadata=wire(omit=if_none))
    # where the trainer settings came from and what they are (written with the format)
    chat_settings: str | None = field(default=None, metadata=wire(omit=unless("format")))
    mask_preview: MaskPreview | None = field(default=None, metadata=wire(omit=if_none))  # --show-mask


@dataclass(frozen=True)
class DatasetSection(JsonForm):
    """The ``dataset`` section: the specs asked for, the rows scanned and how long it took, the model's
    limits the data was checked against, and one entry per split."""

    specs: tuple[str, ...]
    rows_scanned: int
    seconds: float
    limits: dict[str, Any]  # the dataset kernel's limits by name (None: not known, not checked)
    num_labels_source: str | None
    splits: tuple[SplitSection, ...]

    def split(self, name: str) -> SplitSection:
        """The first split of that name (KeyError when none)."""
        for s in self.splits:
            if s.split == name:
                return s
        raise KeyError(name)


# ---- weights (``--weights``) ------------------------------------------------------------------------


@dataclass(frozen=True)
class FlaggedRow(JsonForm):
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


@dataclass(frozen=True)
class NormHistogram(JsonForm):
    """Row norms on log-spaced bins, counted per kind of row (ordinary, added, padding, untrained, suspect);
    all-zero rows apart, since a log axis cannot show them."""

    edges: tuple[float, ...]
    counts: dict[str, tuple[int, ...]]
    zero_rows: dict[str, int]
    threshold_norm: float | None
    median_norm: float


@dataclass(frozen=True)
class WeightSide(JsonForm):
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


@dataclass(frozen=True)
class WeightsSection(JsonForm):
    """The ``weights`` section: tied or not, the classification thresholds, and each matrix by side."""

    tied: bool
    thresholds: dict[str, float]  # zero_max_abs, suspect_z, suspect_ratio
    sides: dict[str, WeightSide]


# ---- --target vllm ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class VllmSection(JsonForm):
    """The ids a serving engine should never sample (undecodable ones; with ``--weights``, also untrained
    rows of reserved tokens, listed again apart): a logits processor's or ``bad_words_ids``' input."""

    suppress_token_ids: tuple[int, ...]
    # None: the weights were not read
    untrained_reserved_ids: tuple[int, ...] | None = field(default=None, metadata=wire(omit=if_none))
