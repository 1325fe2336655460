"""weights.median: np.median's values (odd and even lengths, ties, NaN, inf) without importing numpy.ma."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from hf_vocab_audit.weights.median import median


@pytest.mark.parametrize("seed", range(3))
def test_same_values_as_np_median(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for case in range(300):
        n = int(rng.integers(1, 200))
        x = rng.standard_normal(n) * 10 ** rng.uniform(-5, 5)
        if case % 3 == 0:
            x = np.round(x, 1)  # ties
        if case % 40 == 0:
            x[rng.integers(0, n)] = np.nan
        if case % 45 == 0:
            x[rng.integers(0, n)] = np.inf
        want = float(np.median(x))
        got = median(x)
        assert got == want or (np.isnan(got) and np.isnan(want))


def test_empty_is_nan() -> None:
    assert np.isnan(median(np.array([], np.float64)))


def test_numpy_ma_is_not_imported() -> None:
    code = ("import sys, numpy as np\nfrom hf_vocab_audit.weights.median import median\n"
            "median(np.arange(10.0)); median(np.arange(11.0))\nprint('numpy.ma' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
