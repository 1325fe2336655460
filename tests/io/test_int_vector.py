"""``io.int_vector``: a small integer map read from its safetensors byte range equals what safetensors itself reads,
and anything else (another dtype or shape, too many entries, a cut file) is a reason, never an exception."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from hf_vocab_audit.io.int_vector import read_int_vector
from hf_vocab_audit.io.safetensors_header import TensorInfo, read_header


def _saved(folder: Path, **tensors: np.ndarray) -> dict[str, TensorInfo]:
    path = folder / "model.safetensors"
    save_file(tensors, str(path))
    return {t.name: t for t in read_header(path, "model.safetensors").tensors}


@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_values_equal_safetensors_own_read(tmp_path: Path, dtype: type) -> None:
    d2t = np.array([0, 5, -1, 2**31 - 1 if dtype is np.int32 else 2**40, 7], dtype=dtype)
    infos = _saved(tmp_path, d2t=d2t, other=np.ones((2, 3), dtype=np.float32))
    values, why = read_int_vector(tmp_path, infos["d2t"], limit=10)
    assert why is None and values is not None
    assert list(values) == load_file(str(tmp_path / "model.safetensors"))["d2t"].tolist()


def test_reasons_instead_of_reads(tmp_path: Path) -> None:
    infos = _saved(tmp_path, d2t=np.arange(6, dtype=np.int64), m=np.zeros((2, 2), dtype=np.int64),
                   f=np.zeros(3, dtype=np.float32))
    assert read_int_vector(tmp_path, infos["d2t"], limit=5) == (None, "d2t has 6 entries (more than 5 are not read)")
    assert read_int_vector(tmp_path, infos["m"], limit=5)[1] == "m has shape [2, 2], not a list of ids in a safetensors file"
    assert read_int_vector(tmp_path, infos["f"], limit=5)[1] == "f is F32, not an integer tensor"


def test_a_file_cut_inside_the_tensor_is_a_reason(tmp_path: Path) -> None:
    infos = _saved(tmp_path, d2t=np.arange(64, dtype=np.int64))
    path = tmp_path / "model.safetensors"
    path.write_bytes(path.read_bytes()[: infos["d2t"].span[0] + 8])
    assert read_int_vector(tmp_path, infos["d2t"], limit=100) == (None, "model.safetensors ends inside d2t")
