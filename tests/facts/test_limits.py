"""One limits model: the static rules, the dataset kernel and the guard all check against ``InputLimits``.

The checkpoint's facts and the live modules give the same limits; one bound changed in ``InputLimits``
changes the verdict of all three consumers (so a new kind of limit is added in one place); the head's
label kind is the one transformers itself settles on at run time.
"""

from __future__ import annotations

import pytest
import torch
import transformers
from builders import checkpoint
from dataset_builders import write_parquet

from hf_vocab_audit import audit
from hf_vocab_audit.facts import gather
from hf_vocab_audit.facts.limits import TOKEN_TYPE_IDS, Bound, InputLimits, LabelKind, input_limits, label_kind
from hf_vocab_audit.guard import check_batch, limits_of


@pytest.fixture(scope="module")
def bert_cls(tmp_path_factory):
    """BertForSequenceClassification, 3 labels, 104 rows, 64 positions, 2 token types; a healthy pair."""
    folder = tmp_path_factory.mktemp("bert_cls")
    checkpoint(folder, "bert-cls", rows=104, model={"num_labels": 3}, model_max_length=64)
    return folder


def test_the_checkpoints_facts_and_the_live_modules_give_the_same_limits(bert_cls):
    static, missing = input_limits(gather(bert_cls))
    live = limits_of(transformers.BertForSequenceClassification.from_pretrained(bert_cls)).inputs
    assert not missing
    shared = ("input_rows", "type_vocab_size", "positions", "num_labels", "label_kind", "ignore_index")
    assert {f: getattr(static, f) for f in shared} == {f: getattr(live, f) for f in shared}
    assert (static.input_rows, static.type_vocab_size, static.positions, static.num_labels) == (104, 2, 64, 3)
    assert static.label_kind == LabelKind.CLASSES


def _three_verdicts(folder, tmp_path) -> dict[str, list[str]]:
    """HVA302/HVA503 as the static audit, the dataset scan and the guard give them for token types 0/1."""
    data = write_parquet(tmp_path / "train.parquet", {"input_ids": [[5, 6, 7]], "token_type_ids": [[0, 0, 1]]})
    report = audit(folder, datasets=[str(data)])
    model = transformers.BertForSequenceClassification.from_pretrained(folder)
    batch = {"input_ids": torch.tensor([[5, 6, 7]]), "token_type_ids": torch.tensor([[0, 0, 1]])}
    return {
        "static": [f.code for f in report.findings if f.code == "HVA302"],
        "dataset": [f.code for f in report.findings if f.code == "HVA503"],
        "guard": [v.code for v in check_batch(batch, limits_of(model))],
    }


def test_one_bound_drives_the_static_rules_the_kernel_and_the_guard(bert_cls, tmp_path, monkeypatch):
    assert _three_verdicts(bert_cls, tmp_path / "healthy") == {"static": [], "dataset": [], "guard": []}
    real = InputLimits.bound

    def one_token_type(self: InputLimits, key: str) -> Bound | None:  # a limit changed in one place only
        return Bound(1) if key == TOKEN_TYPE_IDS else real(self, key)

    monkeypatch.setattr(InputLimits, "bound", one_token_type)
    assert _three_verdicts(bert_cls, tmp_path / "one") == {"static": ["HVA302"], "dataset": ["HVA503"],
                                                           "guard": ["HVA503"]}


@pytest.mark.parametrize("num_labels, problem_type, labels", [
    (1, None, torch.tensor([0.5, 2.0])),
    (1, None, torch.tensor([1, 3])),
    (3, None, torch.tensor([0, 2])),
    (3, "multi_label_classification", torch.tensor([[1.0, 0.0, 1.0], [0.0, 0.0, 0.0]])),
    (2, "regression", torch.tensor([[0.5, 1.0], [2.0, 3.0]])),
])
def test_label_kind_is_the_problem_type_transformers_settles_on(num_labels, problem_type, labels):
    """transformers writes the problem type it chose into the config on the first forward with labels."""
    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=40, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                  num_attention_heads=2, num_labels=num_labels, problem_type=problem_type)
    model = transformers.BertForSequenceClassification(cfg).eval()
    model(input_ids=torch.randint(0, 40, (2, 5)), labels=labels)
    settled = {"regression": LabelKind.REGRESSION, "single_label_classification": LabelKind.CLASSES,
               "multi_label_classification": LabelKind.MULTI_LABEL}[model.config.problem_type]
    assert label_kind("BertForSequenceClassification", problem_type, num_labels) == settled


def test_bounds_say_what_each_input_may_hold():
    limits = InputLimits(input_rows=10, output_rows=12, type_vocab_size=2, positions=8, num_labels=3,
                         decoder_input_rows=6, label_kind=LabelKind.CTC)
    assert limits.bound("input_ids") == Bound(10)
    assert limits.bound("decoder_input_ids") == Bound(6)
    assert limits.bound("position_ids") == Bound(8)
    assert limits.bound("labels") == Bound(12, negatives_ignored=True)
    assert limits.label_bound(LabelKind.CLASSES) == Bound(3, -100)
    assert limits.label_bound(LabelKind.REGRESSION) is None and limits.label_bound(LabelKind.SPANS) is None
    assert limits.bound("attention_mask") is None  # eager and SDPA attend on any non-zero value
    assert InputLimits(attention_mask_below=2).bound("attention_mask") == Bound(2)  # flash-attention's varlen path
    import numpy as np

    values = np.array([-100, -1, 0, 2, 3, 12])
    assert Bound(3, -100).bad(values).tolist() == [False, True, False, False, True, True]
    assert Bound(12, negatives_ignored=True).bad(values).tolist() == [False] * 5 + [True]
