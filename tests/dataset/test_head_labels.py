"""Labels per task head in the dataset scan: what each head's loss accepts, the verdict decided by running it.

For every head and dataset below, each row is fed to the tiny transformers head on CPU (a batch of one,
the loss computed or an exception); the scan must flag exactly the rows that raise, with their locations,
and stay quiet on healthy data (regression targets, multi-label vectors, QA positions past the length).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
import transformers
from builders import TINY, make_tokenizer
from dataset_builders import write_parquet

from hf_vocab_audit import audit

ROWS = 40  # embedding rows (the tokenizer's 40 ids fit)
SEQ = 6
LABEL_CODES = ("HVA501", "HVA510", "HVA511", "HVA512", "HVA516", "HVA517", "HVA520", "HVA560", "HVA561", "HVA562")

# head -> (model class, config overrides)
HEADS: dict[str, tuple[str, dict[str, Any]]] = {
    "regression": ("BertForSequenceClassification", {"num_labels": 1}),
    "multi-label": ("BertForSequenceClassification", {"num_labels": 3, "problem_type": "multi_label_classification"}),
    "choices": ("BertForMultipleChoice", {}),
    "qa": ("BertForQuestionAnswering", {"num_labels": 2}),
}


@pytest.fixture(scope="module")
def heads(tmp_path_factory) -> dict[str, Path]:
    out = {}
    for name, (cls, overrides) in HEADS.items():
        folder = tmp_path_factory.mktemp(name)
        torch.manual_seed(0)
        cfg = transformers.BertConfig(vocab_size=ROWS, max_position_embeddings=64, pad_token_id=0, **TINY,
                                      **overrides)
        getattr(transformers, cls)(cfg).save_pretrained(folder)
        make_tokenizer(folder, ROWS, style="bert")
        out[name] = folder
    return out


def _ids(seed: int, choices: int | None = None) -> list:
    g = torch.Generator().manual_seed(seed)
    shape = (choices, SEQ) if choices else (SEQ,)
    return torch.randint(5, ROWS, shape, generator=g).tolist()


def _raises(folder: Path, row: dict[str, Any]) -> bool:
    """Whether the head's forward (with its loss) raises on this one row."""
    cls = getattr(transformers, HEADS[folder.name.rstrip("0123456789")][0])
    model = cls.from_pretrained(folder).eval()
    batch = {k: torch.tensor([v]) for k, v in row.items()}
    try:
        with torch.no_grad():
            model(**batch)
    except (IndexError, ValueError, RuntimeError):
        return True
    return False


def _flagged(report) -> dict[str, set[int]]:
    out: dict[str, set[int]] = {}
    for f in report.findings:
        if f.code in LABEL_CODES and f.severity.value == "error":
            out.setdefault(f.code, set()).update(loc["row"] for loc in f.details.get("locations", []))
    return out


def _check(folder: Path, tmp_path: Path, rows: list[dict[str, Any]]) -> dict[str, set[int]]:
    """Scan ``rows`` and compare with execution: flagged rows == rows whose forward raises."""
    data = write_parquet(tmp_path / "train.parquet", {k: [r[k] for r in rows] for k in rows[0]})
    report = audit(folder, datasets=[str(data)])
    flagged = _flagged(report)
    failing = {i for i, row in enumerate(rows) if _raises(folder, row)}
    assert set().union(*flagged.values()) == failing, (flagged, failing)
    assert report.exit_code() == (1 if failing else 0)  # healthy data passes the gate: no gap, no false alarm
    return flagged


def test_regression_targets_are_quiet_integers_included(heads, tmp_path):
    rows = [{"input_ids": _ids(i), "labels": v} for i, v in enumerate([3.5, -7.0, 120.25, 0.0])]
    assert _check(heads["regression"], tmp_path, rows) == {}
    ints = [{"input_ids": _ids(i), "labels": v} for i, v in enumerate([3, 7, 0, 12])]  # was HVA510 against 1 class
    assert _check(heads["regression"], tmp_path / "ints", ints) == {}


def test_multi_label_vectors_are_quiet_and_a_wrong_length_fires(heads, tmp_path):
    healthy = [{"input_ids": _ids(i), "labels": v} for i, v in
               enumerate([[1.0, 0.0, 1.0], [0.0, 0.0, 0.0], [0.0, 1.0, 0.0]])]
    assert _check(heads["multi-label"], tmp_path, healthy) == {}
    broken = [{"input_ids": _ids(i), "labels": v} for i, v in
              enumerate([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0, 1.0], [0.0, 1.0, 0.0], [1.0, 1.0]])]
    assert _check(heads["multi-label"], tmp_path / "broken", broken) == {"HVA560": {1, 3}}


def test_multi_label_head_given_class_ids_fires_every_row(heads, tmp_path):
    rows = [{"input_ids": _ids(i), "labels": v} for i, v in enumerate([0.0, 2.0, 1.0])]
    assert _check(heads["multi-label"], tmp_path, rows) == {"HVA560": {0, 1, 2}}


def test_multiple_choice_reads_nested_ids_and_labels_index_the_choices(heads, tmp_path):
    healthy = [{"input_ids": _ids(i, 4), "labels": v} for i, v in enumerate([0, 3, -100, 2])]
    assert _check(heads["choices"], tmp_path, healthy) == {}  # num_labels is 2: labels 3 and 2 are fine
    broken = [{"input_ids": _ids(i, 4), "labels": v} for i, v in enumerate([0, 4, 3, -1])]
    assert _check(heads["choices"], tmp_path / "broken", broken) == {"HVA561": {1, 3}}


def test_multiple_choice_ids_past_the_rows_fire_on_the_nested_column(heads, tmp_path):
    bad = _ids(1, 3)
    bad[2][4] = ROWS + 5
    rows = [{"input_ids": _ids(0, 3), "labels": 0}, {"input_ids": bad, "labels": 1}]
    flagged = _check(heads["choices"], tmp_path, rows)
    assert flagged == {"HVA501": {1}}


def test_qa_positions_past_the_sequence_are_quiet(heads, tmp_path):
    """transformers clamps start/end positions to the sequence length: nothing raises, nothing is flagged."""
    rows = [{"input_ids": _ids(i), "start_positions": s, "end_positions": e}
            for i, (s, e) in enumerate([(1, 3), (100, 400), (-1, 2), (0, 0)])]
    assert _check(heads["qa"], tmp_path, rows) == {}
    report = audit(heads["qa"], datasets=[str(tmp_path / "train.parquet")])
    skipped = {c["column"]: c["reason"] for c in report.to_dict()["dataset"]["splits"][0]["skipped_columns"]}
    assert "clamps" in skipped["start_positions"] and "clamps" in skipped["end_positions"]


@pytest.fixture(scope="module")
def ctc_head(tmp_path_factory) -> Path:
    """Wav2Vec2ForCTC with a 12-row CTC head (vocab_size 12), blank = pad id 0."""
    folder = tmp_path_factory.mktemp("ctc")
    torch.manual_seed(0)
    cfg = transformers.Wav2Vec2Config(
        vocab_size=12, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16,
        conv_dim=(8, 8), conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=4,
        num_conv_pos_embedding_groups=2, pad_token_id=0)
    transformers.Wav2Vec2ForCTC(cfg).save_pretrained(folder)
    make_tokenizer(folder, 12, style="bert")
    return folder


def _ctc_raises(folder: Path, labels: list[int]) -> bool:
    model = transformers.Wav2Vec2ForCTC.from_pretrained(folder).eval()
    try:
        with torch.no_grad():
            model(input_values=torch.randn(1, 2000), labels=torch.tensor([labels]))
    except (IndexError, ValueError, RuntimeError):
        return True
    return False


@pytest.mark.parametrize("labels, flagged", [
    ([[1, 2, 3, -100], [4, 5, -100, -100], [0, 11, -1, -7]], {}),  # blank (pad 0), -1 and -7 are padding: quiet
    ([[1, 2, 3, -100], [4, 12, -1, -100], [0, 5, 11, 30]], {"HVA562": {1, 2}}),
])
def test_ctc_labels_index_the_ctc_head(ctc_head, tmp_path, labels, flagged):
    data = write_parquet(tmp_path / "train.parquet", {"labels": labels})
    report = audit(ctc_head, datasets=[str(data)])
    failing = {i for i, row in enumerate(labels) if _ctc_raises(ctc_head, row)}
    assert _flagged(report) == flagged
    assert set().union(*flagged.values()) == failing
