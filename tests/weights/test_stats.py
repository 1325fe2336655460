"""Row indicators read straight from safetensors bytes: bf16/fp16/fp32, chunk boundaries, duplicates, means."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

from hf_vocab_audit.io import rows as reader_mod
from hf_vocab_audit.io.rows import RowReader
from hf_vocab_audit.io.safetensors_header import read_header
from hf_vocab_audit.weights.stats import scan


def _write(tmp_path, matrix: torch.Tensor, extra: bool = True):
    tensors = {"model.embed_tokens.weight": matrix.contiguous()}
    if extra:  # another tensor before it in the file, so the byte offset is not zero
        tensors["a.first"] = torch.ones(3, dtype=torch.float32)
    path = tmp_path / "model.safetensors"
    save_file(tensors, path)
    info = next(t for t in read_header(path, path.name).tensors if t.name == "model.embed_tokens.weight")
    return RowReader(tmp_path, info)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_norms_and_max_match_torch(tmp_path, dtype, monkeypatch):
    monkeypatch.setattr(reader_mod, "CHUNK_BYTES", 7 * 4 * 24)  # 7 rows a chunk: boundaries inside the matrix
    torch.manual_seed(0)
    m = (torch.randn(50, 24) * 0.02).to(dtype)
    stats = scan(_write(tmp_path, m))
    ref = m.float()
    np.testing.assert_allclose(stats.norm, ref.norm(dim=1).double().numpy(), rtol=1e-6)
    np.testing.assert_array_equal(stats.max_abs, ref.abs().amax(dim=1).numpy())
    assert not stats.mean_like.any() and (stats.duplicate_of == -1).all()


def test_duplicates_across_chunks_and_zero_rows(tmp_path, monkeypatch):
    monkeypatch.setattr(reader_mod, "CHUNK_BYTES", 4 * 4 * 8)
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
