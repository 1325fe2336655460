"""Row indicators read straight from safetensors bytes: bf16/fp16/fp32, block and slice boundaries,
zero rows, duplicates, means, and the reader thread's failures."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

from hf_vocab_audit.errors import AuditError
from hf_vocab_audit.io import rows as reader_mod
from hf_vocab_audit.io.rows import RowReader
from hf_vocab_audit.io.safetensors_header import read_header
from hf_vocab_audit.weights import rowpass
from hf_vocab_audit.weights.stats import max_abs_of, scan


def _write(tmp_path, matrix: torch.Tensor, extra: bool = True):
    tensors = {"model.embed_tokens.weight": matrix.contiguous()}
    if extra:  # another tensor before it in the file, so the byte offset is not zero
        tensors["a.first"] = torch.ones(3, dtype=torch.float32)
    path = tmp_path / "model.safetensors"
    save_file(tensors, path)
    info = next(t for t in read_header(path, path.name).tensors if t.name == "model.embed_tokens.weight")
    return RowReader(tmp_path, info)


def _small_blocks(monkeypatch, block_rows: int, slice_rows: int, cols: int, itemsize: int) -> None:
    """Blocks of ``block_rows`` and slices of ``slice_rows``: both boundaries fall inside the matrix."""
    monkeypatch.setattr(rowpass, "BLOCK_BYTES", block_rows * cols * itemsize)
    monkeypatch.setattr(rowpass, "SLICE_BYTES", slice_rows * cols * 4)


@pytest.mark.parametrize("cols", [24, 25])  # bf16: even widths are widened in pairs, odd ones whole
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_pass_matches_torch(tmp_path, dtype, cols, monkeypatch):
    _small_blocks(monkeypatch, 11, 3, cols, torch.finfo(dtype).bits // 8)
    torch.manual_seed(0)
    m = (torch.randn(50, cols) * 0.02 + 0.001).to(dtype)
    m[7] = m[41]
    reader = _write(tmp_path, m)
    one = rowpass.run_pass(reader)
    ref = m.double()
    np.testing.assert_allclose(one.norm, ref.norm(dim=1).numpy(), rtol=1e-6)
    np.testing.assert_allclose(one.colsum, ref.sum(dim=0).numpy(), rtol=1e-5, atol=1e-9)
    assert one.keys[7] == one.keys[41] and len(set(one.keys.tolist())) == 49
    ids = np.array([41, 0, 49, 7])
    np.testing.assert_array_equal(max_abs_of(reader, ids), m.float().abs().amax(dim=1).numpy()[ids])
    stats = scan(reader)
    assert np.flatnonzero(stats.duplicate_of >= 0).tolist() == [7, 41] and not stats.zero.any()


def test_zero_rows_are_decided_exactly_at_the_threshold(tmp_path):
    """Only rows whose norm could be all-zero are re-read; the verdict is max |v| <= 1e-16 exactly."""
    m = torch.randn(8, 16, dtype=torch.float64) * 0.02
    m[0] = 0
    m[1] = 1e-16  # every value at the threshold: norm 4e-16, zero
    m[2] = 0
    m[2, 5] = -2e-16  # one value over it: the norm (2e-16) is small enough to be re-read, not zero
    m[3] = 1e-40  # float32 denormals: their squares vanish
    m[4] = float("nan")
    m[5] = 0
    m[5, 0] = float("inf")
    m = m.float()
    stats = scan(_write(tmp_path, m))
    assert np.flatnonzero(stats.zero).tolist() == [0, 1, 3]
    expected = m.abs().amax(dim=1).numpy()
    reader = _write(tmp_path, m)
    got = max_abs_of(reader, np.arange(8))
    np.testing.assert_array_equal(got, expected)  # NaN where the row holds one


def test_a_file_cut_short_while_reading_is_an_error_and_the_reader_stops(tmp_path, monkeypatch):
    _small_blocks(monkeypatch, 4, 2, 8, 4)
    reader = _write(tmp_path, torch.randn(64, 8), extra=False)
    before = threading.active_count()
    with open(reader.path, "r+b") as fh:  # the header was read and the tensor mapped: then the file shrank
        fh.truncate(reader.info.begin + 20 * 8 * 4)
    with pytest.raises(AuditError, match="ended early"):
        rowpass.run_pass(reader)
    assert threading.active_count() == before


def test_an_error_in_the_reduction_stops_the_reader(tmp_path, monkeypatch):
    _small_blocks(monkeypatch, 4, 2, 8, 4)
    reader = _write(tmp_path, torch.randn(64, 8), extra=False)
    calls = []

    def failing(a, out):
        calls.append(1)
        if len(calls) == 3:
            raise MemoryError("boom")
        return np.einsum("ij,ij->i", a, a, out=out)

    monkeypatch.setattr(rowpass, "_rowdot", failing)
    before = threading.active_count()
    with pytest.raises(MemoryError):
        rowpass.run_pass(reader)
    assert threading.active_count() == before


def test_an_empty_matrix_has_no_rows_to_read(tmp_path):
    one = rowpass.run_pass(_write(tmp_path, torch.zeros(0, 8)))
    assert one.norm.shape == (0,) and one.colsum.tolist() == [0.0] * 8


def test_duplicates_across_chunks_and_zero_rows(tmp_path, monkeypatch):
    monkeypatch.setattr(reader_mod, "CHUNK_BYTES", 4 * 4 * 8)
    _small_blocks(monkeypatch, 7, 2, 8, 4)
    torch.manual_seed(1)
    m = torch.randn(30, 8)
    m[[5, 17, 29]] = m[3].clone()  # one group across chunks
    m[[10, 11]] = 0  # zero rows are "zero", not duplicates
    stats = scan(_write(tmp_path, m))
    assert np.flatnonzero(stats.duplicate_of >= 0).tolist() == [3, 5, 17, 29]
    assert set(stats.duplicate_of[[3, 5, 17, 29]].tolist()) == {3}
    assert np.flatnonzero(stats.zero).tolist() == [10, 11]
    assert (stats.norm[[10, 11]] == 0).all()


def test_row_equal_to_the_mean_is_found(tmp_path):
    torch.manual_seed(2)
    m = torch.randn(64, 32) * 0.02 + 0.01
    m[-2] = 0  # e.g. a padding_idx row: transformers' mean includes it
    m[-1] = m[:-1].mean(dim=0)  # what mean resizing leaves
    stats = scan(_write(tmp_path, m))
    assert np.flatnonzero(stats.mean_like).tolist() == [63]


def test_row_equal_to_the_mean_of_non_zero_rows_is_found(tmp_path):
    torch.manual_seed(3)
    m = torch.randn(64, 32) * 0.02 + 0.01
    m[-1] = m[:-2].mean(dim=0)
    m[-2] = 0
    stats = scan(_write(tmp_path, m))
    assert np.flatnonzero(stats.mean_like).tolist() == [63]


def test_reading_maps_only_the_tensor(tmp_path):
    m = torch.arange(12, dtype=torch.float32).reshape(4, 3)
    r = _write(tmp_path, m)
    assert r.info.begin > 8
    assert np.asarray(r.raw).tolist() == m.tolist()


def test_fp16_pairs_widen_every_finite_half_exactly():
    """Every one of the 63488 finite fp16 bit patterns (both zeros and the subnormals too) becomes the
    float32 numpy's cast gives, bit for bit; inf and NaN mark their block for numpy's cast."""
    bits = np.arange(65536, dtype=np.uint16)
    finite = bits[(bits & 0x7C00) != 0x7C00].reshape(62, 1024)
    layout = rowpass._Layout("F16", 62, 1024)
    assert layout.pairs and not layout.special(finite.view(np.float16))
    even, odd = layout.parts(finite.view(np.float16))
    want = finite.view(np.float16).astype(np.float32)
    np.testing.assert_array_equal(even.view(np.uint32), want[:, 0::2].view(np.uint32))
    np.testing.assert_array_equal(odd.view(np.uint32), want[:, 1::2].view(np.uint32))
    for pattern in (0x7C00, 0xFC00, 0x7E00, 0xFC01):  # +inf, -inf, NaN, -NaN
        block = finite.copy()
        block[3, 5] = pattern
        assert layout.special(block.view(np.float16))


@pytest.mark.parametrize("cols", [16, 15])
def test_fp16_inf_and_nan_rows_keep_their_norms(tmp_path, cols, monkeypatch):
    _small_blocks(monkeypatch, 4, 2, cols, 2)
    torch.manual_seed(4)
    m = (torch.randn(12, cols) * 3).half()
    m[1, 3] = float("inf")  # block 0
    m[9, 0] = float("nan")  # block 2; block 1 (rows 4-7) widens the fast way
    m[5, 2] = 65504.0  # the largest finite half
    one = rowpass.run_pass(_write(tmp_path, m, extra=False))
    ref = m.double()
    np.testing.assert_allclose(one.norm, ref.norm(dim=1).numpy(), rtol=1e-6)
    np.testing.assert_allclose(one.colsum, ref.sum(dim=0).numpy(), rtol=1e-5)


@pytest.mark.parametrize("cols", [70000, 70001])
def test_rows_wider_than_65536_sum_their_squares_in_float64(tmp_path, cols):
    m = torch.full((2, cols), 0.02)
    m[0] = 3e19  # squares overflow float32
    m = m.bfloat16()
    one = rowpass.run_pass(_write(tmp_path, m, extra=False))
    np.testing.assert_allclose(one.norm, m.double().norm(dim=1).numpy(), rtol=1e-9)


def test_fp16_norms_hold_when_subnormals_flush_to_zero(tmp_path):
    """torch.set_flush_denormal(True) (DAZ/FTZ) in the calling thread: fp16 rows of subnormal values keep
    their norms (the pair widening multiplies float32 subnormals; numpy's cast does not)."""
    m = torch.full((4, 16), 3e-6).half()  # a subnormal half
    m[1] = torch.randn(16).half()
    reader = _write(tmp_path, m, extra=False)
    if not torch.set_flush_denormal(True):
        pytest.skip("this CPU cannot flush subnormals")
    try:
        one = rowpass.run_pass(reader)
    finally:
        torch.set_flush_denormal(False)
    np.testing.assert_allclose(one.norm, m.double().norm(dim=1).numpy(), rtol=1e-6)
