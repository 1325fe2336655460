"""The suspect threshold: min(exp(median ln-norm - 5 MAD-sigma), 0.5 x median norm), on token rows only."""

from __future__ import annotations

import numpy as np
import pytest

from hf_vocab_audit.weights import classify as C
from hf_vocab_audit.weights.stats import MatrixStats


def _stats(norm, zero=(), mean=(), dup=()):
    n = len(norm)
    is_zero = np.zeros(n, bool)
    is_zero[list(zero)] = True
    norm = np.asarray(norm, float)
    norm[list(zero)] = 0
    mean_like = np.zeros(n, bool)
    mean_like[list(mean)] = True
    duplicate_of = np.full(n, -1)
    duplicate_of[list(dup)] = dup[0] if dup else -1
    return MatrixStats("e", "F32", n, 4, norm, is_zero, duplicate_of, mean_like, 0.1, float(np.median(norm)))


def test_threshold_formula():
    rng = np.random.default_rng(0)
    norms = np.exp(rng.normal(0.0, 0.2, 1000))
    threshold, m, s = C.suspect_threshold(norms)
    logs = np.log(norms)
    assert m == pytest.approx(np.median(logs))
    assert s == pytest.approx(1.4826 * np.median(np.abs(logs - np.median(logs))))
    assert threshold == pytest.approx(min(np.exp(m - 5 * s), 0.5 * np.exp(m)))


@pytest.mark.parametrize("spread", [0.05, 0.3], ids=["tight: ratio bound", "wide: z bound"])
def test_rows_just_below_the_threshold_are_suspect(spread):
    rng = np.random.default_rng(1)
    norms = np.exp(rng.normal(0.0, spread, 500))
    # Values deep in the lower tail do not move the median or the MAD: place the probes after the fact.
    probe = np.concatenate([norms, [1e-9, 1e-9]])
    threshold, _m, _s = C.suspect_threshold(probe)
    probe[-2:] = threshold * 1.01, threshold * 0.99
    cls = C.classify(_stats(probe), np.arange(len(probe)))
    assert cls.status[-2] == C.TRAINED and cls.status[-1] == C.SUSPECT
    assert cls.reasons[-1] == C.LOW_NORM
    assert (cls.status[:-2] == C.TRAINED).all()


def test_untrained_reasons_and_padding_rows():
    norms = np.ones(10)
    cls = C.classify(_stats(norms, zero=(1,), mean=(2,), dup=(3, 4)), np.arange(8))
    assert cls.status.tolist() == [0, 1, 1, 1, 1, 0, 0, 0, 3, 3]
    assert C.reason_names(int(cls.reasons[1])) == ["zero"]
    assert C.reason_names(int(cls.reasons[2])) == ["mean"]
    assert C.reason_names(int(cls.reasons[4])) == ["duplicate"]


def test_padding_rows_do_not_shape_the_threshold():
    norms = np.concatenate([np.ones(100), np.full(300, 1e-3)])  # 300 tiny padding rows
    cls = C.classify(_stats(norms), np.arange(100))
    assert cls.threshold_norm == pytest.approx(0.5)
    assert (cls.status[100:] == C.NOT_A_TOKEN).all()
