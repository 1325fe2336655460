"""Every key the model indexes with: the guard's verdict equals what a real CPU forward does, and the
``repro`` shape twin raises the same exception class and message as the full-weights forward."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from hf_vocab_audit.guard import check_batch, limits_of
from hf_vocab_audit.guard.evidence import write_evidence
from hf_vocab_audit.repro import replay


def ids(b: int, n: int, low: int = 5, high: int = 90, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(low, high, (b, n), generator=g)


def put(t: torch.Tensor, value: int, row: int = 1, pos: int = 2) -> torch.Tensor:
    t = t.clone()
    t[row, pos] = value
    return t


def lm(**over: torch.Tensor) -> dict[str, torch.Tensor]:
    x = ids(2, 6)
    return {"input_ids": x, "attention_mask": torch.ones_like(x), "labels": x.clone(), **over}


def labels_all_masked() -> dict[str, torch.Tensor]:
    x = ids(2, 6)
    return {"input_ids": x, "labels": torch.full_like(x, -100)}


def cls(label: list[int]) -> dict[str, torch.Tensor]:
    x = ids(len(label), 6)
    return {"input_ids": x, "attention_mask": torch.ones_like(x), "labels": torch.tensor(label)}


def seq(n: int, **over: torch.Tensor) -> dict[str, torch.Tensor]:
    return {"input_ids": ids(2, n), **over}


def s2s(**over: torch.Tensor) -> dict[str, torch.Tensor]:
    x = ids(2, 6)
    return {"input_ids": x, "labels": x.clone(), **over}


# (case id, checkpoint kind, batch factory, whether a CPU forward fails: checked, not assumed)
CASES: list[tuple[str, str, Callable[[], dict[str, torch.Tensor]]]] = [
    ("ids-last-row", "llama", lambda: lm(input_ids=put(ids(2, 6), 103))),
    ("ids-rows", "llama", lambda: lm(input_ids=put(ids(2, 6), 104))),
    ("ids-minus-100", "llama", lambda: lm(input_ids=put(ids(2, 6), -100))),
    ("ids-minus-1", "llama", lambda: lm(input_ids=put(ids(2, 6), -1))),
    ("lm-labels-last-row", "llama", lambda: lm(labels=put(ids(2, 6), 103))),
    ("lm-labels-vocab", "llama", lambda: lm(labels=put(ids(2, 6), 104))),
    ("lm-labels-minus-1", "llama", lambda: lm(labels=put(ids(2, 6), -1))),
    ("lm-first-label-is-never-scored", "llama", lambda: lm(labels=put(ids(2, 6), 104, pos=0))),
    ("mlm-first-label-is-scored", "bert", lambda: seq(6, labels=put(torch.full((2, 6), -100), 100, pos=0))),
    ("lm-labels-all-ignored", "llama", labels_all_masked),
    ("attention-mask-2", "llama", lambda: lm(attention_mask=put(torch.ones(2, 6, dtype=torch.long), 2))),
    ("class-labels-edge", "llama-cls", lambda: cls([0, 2])),
    ("class-labels-num-labels", "llama-cls", lambda: cls([0, 3])),
    ("class-labels-minus-1", "llama-cls", lambda: cls([-1, 1])),
    ("class-labels-ignored", "llama-cls", lambda: cls([-100, 1])),
    ("bert-type-1", "bert", lambda: seq(6, token_type_ids=put(torch.zeros(2, 6, dtype=torch.long), 1))),
    ("bert-type-2", "bert", lambda: seq(6, token_type_ids=put(torch.zeros(2, 6, dtype=torch.long), 2))),
    ("bert-last-position", "bert", lambda: seq(64)),
    ("bert-too-long", "bert", lambda: seq(65)),
    ("bert-position-id-edge", "bert", lambda: seq(6, position_ids=put(torch.zeros(2, 6, dtype=torch.long), 63))),
    ("bert-position-id-rows", "bert", lambda: seq(6, position_ids=put(torch.zeros(2, 6, dtype=torch.long), 64))),
    ("bert-mlm-labels-vocab", "bert", lambda: seq(6, labels=put(torch.full((2, 6), -100), 100))),
    ("roberta-type-1", "roberta", lambda: seq(6, token_type_ids=put(torch.zeros(2, 6, dtype=torch.long), 1))),
    ("roberta-512-of-514", "roberta", lambda: seq(64)),  # 66 rows, padding_idx 1: 64 usable
    ("roberta-513-of-514", "roberta", lambda: seq(65)),
    ("roberta-long-but-padded", "roberta", lambda: seq(65, input_ids=ids(2, 65).index_fill(1, torch.tensor([64]), 1))),
    ("t5-decoder-ids-rows", "t5", lambda: s2s(decoder_input_ids=put(ids(2, 6, seed=1), 100))),
    ("t5-decoder-ids-edge", "t5", lambda: s2s(decoder_input_ids=put(ids(2, 6, seed=1), 99))),
    ("t5-labels-vocab", "t5", lambda: s2s(labels=put(ids(2, 6), 100))),
    ("t5-labels-ignored", "t5", lambda: s2s(labels=put(ids(2, 6), -100))),
    ("bart-64-positions", "bart", lambda: seq(64)),
    ("bart-65-positions", "bart", lambda: seq(65)),
    ("bart-labels-64-long", "bart", lambda: s2s(labels=ids(2, 64))),
    ("bart-labels-65-long", "bart", lambda: s2s(labels=ids(2, 65))),
]
IDS = [c[0] for c in CASES]


@pytest.mark.parametrize(("name", "kind", "make"), CASES, ids=IDS)
def test_guard_verdict_equals_cpu_forward(name, kind, make, load_model):
    model = load_model(kind)
    batch = make()
    cpu = replay(model, batch)
    violations = check_batch(batch, limits_of(model))
    assert bool(violations) == (cpu.exc_type is not None), (name, cpu, violations)


def test_cases_cover_both_verdicts(load_model):
    """The table holds failing and clean batches for every model kind (no vacuous parametrisation)."""
    outcomes: dict[str, set[bool]] = {}
    for _name, kind, make in CASES:
        outcomes.setdefault(kind, set()).add(replay(load_model(kind), make()).exc_type is not None)
    assert outcomes == {kind: {True, False} for kind in outcomes}


@pytest.mark.parametrize(("name", "kind", "make"), CASES, ids=IDS)
def test_repro_twin_matches_full_weights(name, kind, make, load_model, guard_ckpts, tmp_path, run_cli):
    """The shape twin raises what the real weights raise, and ``repro`` exits 1 exactly when the forward fails."""
    import json

    from hf_vocab_audit.guard.twin import build_twin
    from hf_vocab_audit.repro import _rows

    model = load_model(kind)
    batch = make()
    full = replay(model, batch)
    folder = guard_ckpts[kind]
    config = json.loads((folder / "config.json").read_text())
    twin = build_twin(config, type(model).__name__, where="config.json", **_rows(folder, None))
    assert sum(p.numel() for p in twin.parameters()) < sum(p.numel() for p in model.parameters())
    got = replay(twin, batch)
    assert (got.exc_type, got.message) == (full.exc_type, full.message)
    limits = limits_of(model)
    path = write_evidence(tmp_path, batch, limits, check_batch(batch, limits), rank=0, worker=None, batch_number=0, config=None)
    code, out, _err = run_cli("repro", path, folder)
    assert code == (1 if full.exc_type else 0), out
    if full.exc_type:
        assert f"reproduced: {full.exc_type}: {full.message}" in out
    else:
        assert "GPU-only" in out


def test_labels_padded_with_minus_one_blame_the_padding_not_a_processor(load_model):
    """A text collator padding labels with -1 (label_pad_token_id=-1) on a text-only model: the cause line
    names the padding and the ignore index; no image processor is involved."""
    (v,) = check_batch(lm(labels=put(ids(2, 6), -1)), limits_of(load_model("llama")))
    assert v.code == "HVA520" and "padded or masked with -1 instead of the ignore index -100" in v.cause
    assert "image" not in v.cause and "processor" not in v.cause
