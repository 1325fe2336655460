"""The guard reads labels as each task head's loss does (facts.limits.LabelKind); verdicts by running the head.

Each batch is checked by the guard and run through the tiny head on CPU: the guard reports a violation
exactly when the forward (with its loss) raises, with the same codes as the dataset scan.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
import transformers
from builders import TINY

from hf_vocab_audit.guard import check_batch, limits_of

ROWS = 40


def _bert(cls: str, **overrides: Any) -> Any:
    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=ROWS, max_position_embeddings=64, pad_token_id=0, **TINY, **overrides)
    return getattr(transformers, cls)(cfg).eval()


def _ctc() -> Any:
    torch.manual_seed(0)
    cfg = transformers.Wav2Vec2Config(
        vocab_size=12, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16,
        conv_dim=(8, 8), conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=4,
        num_conv_pos_embedding_groups=2, pad_token_id=0)
    return transformers.Wav2Vec2ForCTC(cfg).eval()


def _ids(*shape: int) -> torch.Tensor:
    return torch.randint(5, ROWS, shape, generator=torch.Generator().manual_seed(1))


HEADS = {
    "regression": lambda: _bert("BertForSequenceClassification", num_labels=1),
    "multi-label": lambda: _bert("BertForSequenceClassification", num_labels=3,
                                 problem_type="multi_label_classification"),
    "classes": lambda: _bert("BertForSequenceClassification", num_labels=3),
    "choices": lambda: _bert("BertForMultipleChoice"),
    "qa": lambda: _bert("BertForQuestionAnswering", num_labels=2),
    "ctc": _ctc,
}

CASES = [
    ("regression", {"input_ids": _ids(2, 6), "labels": torch.tensor([3.5, -7.0])}, None),
    ("regression", {"input_ids": _ids(2, 6), "labels": torch.tensor([3, 70])}, None),
    ("multi-label", {"input_ids": _ids(2, 6), "labels": torch.tensor([[1.0, 0.0, 1.0], [0.0, 0.0, 0.0]])}, None),
    ("multi-label", {"input_ids": _ids(2, 6), "labels": torch.tensor([[1.0, 0, 1, 0], [0.0, 0, 0, 1]])}, "HVA560"),
    ("multi-label", {"input_ids": _ids(2, 6), "labels": torch.tensor([0.0, 2.0])}, "HVA560"),
    # integer multi-hot vectors (a dataset column of int lists, collated): BCE raises on the dtype
    ("multi-label", {"input_ids": _ids(2, 6), "labels": torch.tensor([[1, 0, 1], [0, 0, 0]])}, "HVA563"),
    ("multi-label", {"input_ids": _ids(2, 6), "labels": torch.tensor([[True, False, True], [False] * 3])}, "HVA563"),
    ("multi-label", {"input_ids": _ids(2, 6), "labels": torch.tensor([[1, 0, 1, 0], [0, 0, 0, 1]])}, "HVA560"),
    # problem_type unset: integer labels are class ids, a vector per example raises in cross entropy
    ("classes", {"input_ids": _ids(2, 6), "labels": torch.tensor([[1, 0, 1], [0, 1, 0]])}, "HVA563"),
    ("classes", {"input_ids": _ids(2, 6), "labels": torch.tensor([2, 0])}, None),
    ("classes", {"input_ids": _ids(2, 6), "labels": torch.tensor([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]])}, None),
    ("choices", {"input_ids": _ids(2, 4, 6), "labels": torch.tensor([0, 3])}, None),
    ("choices", {"input_ids": _ids(2, 4, 6), "labels": torch.tensor([-100, 2])}, None),
    ("choices", {"input_ids": _ids(2, 4, 6), "labels": torch.tensor([0, 4])}, "HVA561"),
    ("choices", {"input_ids": _ids(2, 4, 6), "labels": torch.tensor([-1, 1])}, "HVA561"),
    ("qa", {"input_ids": _ids(2, 6), "start_positions": torch.tensor([100, 2]),
            "end_positions": torch.tensor([3, 400])}, None),
    ("ctc", {"input_values": torch.randn(2, 2000), "labels": torch.tensor([[1, 0, 3, -100], [4, 5, -1, -7]])}, None),
    ("ctc", {"input_values": torch.randn(2, 2000), "labels": torch.tensor([[1, 2, 12, -100], [4, 5, -1, -7]])},
     "HVA562"),
]


@pytest.mark.parametrize("head, batch, code", CASES, ids=[f"{h}-{i}" for i, (h, _, _) in enumerate(CASES)])
def test_guard_verdict_equals_the_heads_forward(head, batch, code):
    model = HEADS[head]()
    found = [v.code for v in check_batch(batch, limits_of(model))]
    try:
        with torch.no_grad():
            model(**batch)
        raised = False
    except (IndexError, ValueError, RuntimeError):
        raised = True
    assert raised == (code is not None)
    assert found == ([code] if code else [])


def test_label_kinds_come_from_the_one_limits_model():
    kinds = {head: limits_of(make()).inputs.label_kind.value for head, make in HEADS.items()}
    assert kinds == {"regression": "regression", "multi-label": "multi-label", "classes": "classes", "choices": "choices",
                     "qa": "spans", "ctc": "ctc"}
