"""``--weights``: the embedding matrices' row statistics joined with the tokenizer's view of each id."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.findings import Skipped
from ..core.sections import FlaggedRow, NormHistogram, WeightSide, WeightsSection
from ..facts import Facts
from ..facts.weight_formats.registry import format_of
from ..io.rows import RowReader, supported
from ..io.safetensors_header import TensorInfo
from . import classify as C
from .stats import ZERO_MAX_ABS, MatrixStats, max_abs_of, scan
from .usage import in_normal_use, token_roles

HIST_BINS = 60
LIST_LIMIT = 2000  # ids listed per side in the report's JSON


@dataclass(frozen=True)
class Side:
    """One matrix: "input" (embed_tokens) or "output" (an untied lm_head)."""

    name: str
    file: str  # the safetensors file holding the matrix, relative to the checkpoint folder
    stats: MatrixStats
    cls: C.Classification
    token_ids: np.ndarray = field(repr=False)
    max_abs: dict[int, float] = field(repr=False)  # max |v| of every row flagged on any side (what reports show)

    def flagged(self) -> np.ndarray:
        """Token ids whose row is untrained or suspect."""
        return _flagged(self.cls)

    def indicators(self, token_id: int) -> dict[str, Any]:
        st = self.stats
        dup = int(st.duplicate_of[token_id])
        return {
            "status": C.STATUS_NAMES[int(self.cls.status[token_id])],
            "reasons": C.reason_names(int(self.cls.reasons[token_id])),
            "norm": float(st.norm[token_id]),
            "max_abs": self.max_abs[token_id],
            "duplicate_of": dup if dup >= 0 and dup != token_id else None,
            "median_norm": st.median_norm,
        }


@dataclass(frozen=True)
class WeightFacts:
    """What the weights rules read: the static facts plus per-side row statistics."""

    facts: Facts
    sides: tuple[Side, ...]
    tied: bool
    roles: dict[int, list[str]] = field(repr=False)

    def side(self, name: str) -> Side | None:
        return next((s for s in self.sides if s.name == name), None)

    def sides_with(self, token_id: int) -> tuple[Side, ...]:
        """The sides that have a row for ``token_id`` (an untied lm_head can be shorter or longer than the
        embedding: HVA101/HVA102 report that; here each side speaks only for its own rows)."""
        return tuple(s for s in self.sides if token_id < s.stats.rows)

    def flagged_ids(self) -> list[int]:
        ids: set[int] = set()
        for s in self.sides:
            ids.update(s.flagged().tolist())
        return sorted(ids)

    def used(self, token_id: int) -> bool:
        return in_normal_use(self.roles.get(token_id, []))

    def summary(self) -> WeightsSection:
        """The report's ``weights`` section."""
        return WeightsSection(
            tied=self.tied,
            thresholds={"zero_max_abs": ZERO_MAX_ABS, "suspect_z": C.SUSPECT_Z, "suspect_ratio": C.SUSPECT_RATIO},
            sides={s.name: _side_summary(self, s) for s in self.sides},
        )


def _flagged_row(w: WeightFacts, side: Side, token_id: int) -> FlaggedRow:
    tok = w.facts.tokenizer
    ind = side.indicators(token_id)
    return FlaggedRow(token_id, tok.id_to_token(token_id) if tok else None, tuple(w.roles.get(token_id, [])),
                      ind["status"], tuple(ind["reasons"]), ind["norm"], ind["max_abs"], ind["duplicate_of"],
                      ind["median_norm"])


def _side_summary(w: WeightFacts, side: Side) -> WeightSide:
    st, cls = side.stats, side.cls
    status = cls.status
    flagged = side.flagged()
    used = [i for i in flagged.tolist() if w.used(i)]
    return WeightSide(
        tensor=st.tensor,
        file=side.file,
        dtype=st.dtype,
        rows=st.rows,
        cols=st.cols,
        token_rows=len(side.token_ids),
        padding_rows=int((status == C.NOT_A_TOKEN).sum()),
        counts={name: int((status == code).sum()) for code, name in enumerate(C.STATUS_NAMES[:3])},
        median_norm=st.median_norm,
        mean_row_norm=st.mean_norm,
        threshold_norm=cls.threshold_norm,
        flagged_used=tuple(_flagged_row(w, side, i) for i in used[:LIST_LIMIT]),
        flagged_other_ids=tuple([i for i in flagged.tolist() if not w.used(i)][:LIST_LIMIT]),
        histogram=_histogram(w, side),
    )


def _histogram(w: WeightFacts, side: Side) -> NormHistogram:
    """Row-norm histogram on log-spaced bins, counted per kind of row (for the HTML report)."""
    st, status = side.stats, side.cls.status
    kinds = {
        "padding": status == C.NOT_A_TOKEN,
        "untrained": status == C.UNTRAINED,
        "suspect": status == C.SUSPECT,
    }
    added = np.zeros(st.rows, bool)
    ids = [i for i, r in w.roles.items() if 0 <= i < st.rows and ("added" in r or "chat template" in r)]
    added[ids] = True
    kinds["added"] = added & (status == C.TRAINED)
    kinds["ordinary"] = (status == C.TRAINED) & ~added
    positive = st.norm > 0
    if positive.any():
        lo, hi = float(st.norm[positive].min()), float(st.norm[positive].max())
        edges = np.geomspace(lo, hi * (1 + 1e-9), HIST_BINS + 1) if hi > lo else np.array([lo * 0.9, lo * 1.1])
    else:
        edges = np.array([1e-3, 1.0])
    return NormHistogram(
        edges=tuple(float(e) for e in edges),
        counts={k: tuple(v) for k, v in _bin_counts(st.norm, positive, edges, kinds).items()},
        zero_rows={k: int((m & ~positive).sum()) for k, m in kinds.items()},
        threshold_norm=side.cls.threshold_norm,
        median_norm=st.median_norm,
    )


def _bin_counts(norm: np.ndarray, positive: np.ndarray, edges: np.ndarray,
                kinds: dict[str, np.ndarray]) -> dict[str, list[int]]:
    """``np.histogram(norm[mask & positive], edges)`` counts for every kind's mask, with the bins found once:
    np.histogram sorts its input for bins that are not evenly spaced (these are log-spaced), once per call."""
    bins = len(edges) - 1
    index = np.searchsorted(edges, norm, side="right") - 1
    index[norm == edges[-1]] = bins - 1  # the last bin includes its right edge, as np.histogram's does
    inside = positive & (index >= 0) & (index < bins)
    return {k: np.bincount(index[m & inside], minlength=bins)[:bins].tolist() for k, m in kinds.items()}


def _flagged(cls: C.Classification) -> np.ndarray:
    return np.flatnonzero((cls.status == C.UNTRAINED) | (cls.status == C.SUSPECT))


def _token_ids(ids: np.ndarray, rows: int) -> np.ndarray:
    return ids[(ids >= 0) & (ids < rows)]


def gather_weights(facts: Facts) -> tuple[WeightFacts | None, list[Skipped]]:
    """Read the embedding matrices (only them) and classify every token row; or why it cannot."""
    emb, tensors = facts.embeddings, facts.tensors
    if facts.tokenizer is None:
        return None, [Skipped("weights", facts.missing.get("tokenizer", "no tokenizer"))]
    if tensors is None or emb is None or emb.input is None:
        why = facts.missing.get("input_embedding") or facts.missing.get("tensors", "no weights")
        return None, [Skipped("weights", why)]
    unreadable_rows = format_of(tensors).rows_unreadable(tensors)
    if unreadable_rows is not None:
        return None, [Skipped("weights", unreadable_rows)]
    matrices: list[tuple[str, TensorInfo]] = [("input", emb.input)]
    if not emb.tied and emb.output is not None:
        matrices.append(("output", emb.output))
    scanned, skipped = [], []
    all_ids = np.asarray(facts.required_tokenizer().ids, dtype=np.int64)  # once for both sides
    for name, info in matrices:
        unreadable = supported(info)
        if unreadable:
            skipped.append(Skipped(f"weights ({name} embeddings)", unreadable))
            continue
        reader = RowReader(facts.model_dir, info)
        stats = scan(reader)
        ids = _token_ids(all_ids, stats.rows)
        scanned.append((name, info, reader, stats, C.classify(stats, ids), ids))
    if not scanned:
        return None, skipped
    flagged = np.unique(np.concatenate([_flagged(cls) for *_, cls, _ids in scanned]))
    sides = []
    for name, info, reader, stats, cls, ids in scanned:
        shown = flagged[flagged < stats.rows]
        max_abs = dict(zip(shown.tolist(), max_abs_of(reader, shown).tolist()))
        sides.append(Side(name, info.file, stats, cls, ids, max_abs))
    return WeightFacts(facts, tuple(sides), emb.tied, token_roles(facts.tokenizer)), skipped
