"""Properties of the safetensors header reader, on generated headers (hypothesis).

- any bytes: a header or an AuditError naming the file on one line, nothing else;
- a valid file: read back exactly (names, dtypes, shapes, offsets), in any key order, and in agreement
  with the ``safetensors`` library itself;
- a mutated valid file: whatever the ``safetensors`` library accepts, we accept with the same shapes.
"""

from __future__ import annotations

import json
import struct
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hf_vocab_audit.errors import AuditError
from hf_vocab_audit.io.safetensors_header import DTYPE_BITS, read_header

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
WHOLE_BYTE = sorted(d for d, b in DTYPE_BITS.items() if b % 8 == 0)

_DIR = Path(tempfile.mkdtemp(prefix="st-props-"))


def _file(data: bytes) -> Path:
    path = _DIR / "model.safetensors"
    path.write_bytes(data)
    return path


def _read(data: bytes):
    path = _file(data)
    try:
        return read_header(path, "model.safetensors")
    except AuditError as exc:
        text = str(exc)
        assert "\n" not in text and "\r" not in text
        assert text.startswith(str(path))
        return exc


tensor = st.tuples(
    st.text(min_size=1, max_size=20).filter(lambda n: n != "__metadata__"),
    st.sampled_from(WHOLE_BYTE),
    st.lists(st.integers(0, 6), max_size=3),
)


@st.composite
def valid_files(draw):
    """(file bytes, {name: (dtype, shape, begin, end)}) with contiguous data and shuffled key order."""
    specs = draw(st.lists(tensor, max_size=6, unique_by=lambda t: t[0]))
    header, expected, offset = {}, {}, 0
    for name, dtype, shape in specs:
        size = int(np.prod(shape)) * DTYPE_BITS[dtype] // 8
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        expected[name] = (dtype, tuple(shape), offset, offset + size)
        offset += size
    if draw(st.booleans()):
        header["__metadata__"] = draw(st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=3))
    order = draw(st.permutations(list(header)))
    raw = json.dumps({k: header[k] for k in order}).encode()
    raw += b" " * draw(st.integers(0, 7))  # the format allows trailing spaces
    return struct.pack("<Q", len(raw)) + raw + bytes(offset), expected


@SETTINGS
@given(st.binary(max_size=300))
def test_any_bytes_give_a_header_or_one_line_error(data):
    _read(data)


@SETTINGS
@given(st.binary(max_size=200), st.integers(0, 2**64 - 1))
def test_any_declared_header_length_is_bounded(body, length):
    _read(struct.pack("<Q", length) + body)


@SETTINGS
@given(valid_files())
def test_valid_files_read_back_exactly_and_agree_with_safetensors(case):
    data, expected = case
    header = _read(data)
    assert not isinstance(header, AuditError), header
    got = {t.name: (t.dtype, t.shape, t.begin - header.data_start, t.end - header.data_start) for t in header.tensors}
    assert got == expected
    from safetensors import safe_open

    with safe_open(str(header.path), framework="numpy") as f:
        shapes = {k: tuple(f.get_slice(k).get_shape()) for k in f.keys()}
    assert shapes == {k: v[1] for k, v in expected.items()}


MUTATIONS = st.sampled_from(["dtype", "shape", "begin", "end", "drop_key", "extra_key", "truncate", "grow"])


@SETTINGS
@given(valid_files(), MUTATIONS, st.integers(-3, 2**40), st.randoms(use_true_random=False))
def test_mutated_files_accepted_by_safetensors_are_accepted_by_us(case, mutation, value, rnd):
    data, expected = case
    if not expected:
        return
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8 : 8 + n])
    body = data[8 + n :]
    name = rnd.choice(sorted(expected))
    entry = header[name]
    if mutation == "dtype":
        entry["dtype"] = rnd.choice(sorted(DTYPE_BITS) + ["F128", "", "f32"])
    elif mutation == "shape":
        entry["shape"] = entry["shape"] + [value] if rnd.random() < 0.5 else [value]
    elif mutation in ("begin", "end"):
        entry["data_offsets"][mutation == "end"] = value
    elif mutation == "drop_key":
        del entry[rnd.choice(["dtype", "shape", "data_offsets"])]
    elif mutation == "extra_key":
        entry["extra"] = value
    elif mutation == "truncate":
        body = body[: max(0, len(body) - 1 - value % 8)]
    else:
        body = body + bytes(value % 8 + 1)
    raw = json.dumps(header).encode()
    mutated = struct.pack("<Q", len(raw)) + raw + body
    ours = _read(mutated)
    from safetensors import safe_open

    try:
        with safe_open(str(_file(mutated)), framework="numpy") as f:
            theirs = {k: tuple(f.get_slice(k).get_shape()) for k in f.keys()}
    except Exception:  # the library refuses it: we may refuse or accept (we do not require contiguity)
        return
    assert not isinstance(ours, AuditError), f"safetensors reads it, we refused: {ours}"
    assert {t.name: t.shape for t in ours.tensors} == theirs
