"""The pre-tokenized fast path gives the summaries of the element-wise path, bit for bit.

Labels proved clean from two one-pass bounds (signed min/max and the same bits unsigned), the one-pass
min/max of integer ids, zero-copy numpy views of Arrow buffers, and the reader's parquet read-ahead are each
compared with what the element-wise code computes on the same batches: every -100 pattern, negative values
next to -100, ids past the rows, empty, null and all-masked rows, slices, and widths from int8 to uint64.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hf_vocab_audit.dataset import arrays
from hf_vocab_audit.dataset import kernel as k
from hf_vocab_audit.dataset import summary as s
from hf_vocab_audit.dataset.spec import open_spec
from hf_vocab_audit.facts.limits import InputLimits

ROWS = 1000


def ctx(**limits: int | None) -> s.ScanContext:
    return s.ScanContext("src", "train", (s.ColumnRole("input_ids", k.INPUT_IDS),
                                          s.ColumnRole("labels", k.LM_LABELS, input_ids_column="input_ids")),
                         InputLimits(**{"input_rows": ROWS, "output_rows": ROWS, **limits}), causal_lm=True)


def labels_table(seed: int, *, n: int = 64, dtype: str = "int32", extra: tuple[int, ...] = (),
                 nulls: bool = False) -> pa.Table:
    """Rows of ids with labels = ids and a masked prompt; some rows empty, some all -100; ``extra`` values
    planted at random places in the labels."""
    rng = np.random.default_rng(seed)
    ids, labels = [], []
    for r in range(n):
        length = int(rng.choice([0, 1, 3, 200, 700]))
        row = rng.integers(0, ROWS, size=length)
        lab = row.copy()
        lab[: int(rng.integers(0, length + 1))] = -100
        if r % 7 == 3:
            lab[:] = -100  # all masked
        if r % 11 == 5 and length:
            lab[-1] = -100  # ends masked, starts with a label
        ids.append(row.tolist())
        labels.append(lab.tolist())
    for value in extra:
        r = int(rng.integers(0, n))
        while not labels[r]:
            r = (r + 1) % n
        labels[r][int(rng.integers(0, len(labels[r])))] = value
    if nulls:
        labels[1] = None
    label_type = pa.list_(pa.from_numpy_dtype(np.dtype(dtype)))
    return pa.table({"input_ids": pa.array(ids, pa.list_(pa.int32())), "labels": pa.array(labels, label_type)})


def element_wise(monkeypatch, table: pa.Table, context: s.ScanContext, offset: int = 0) -> s.Summary:
    with monkeypatch.context() as m:
        m.setattr(k, "_lm_label_bounds", lambda *a: None)
        m.setattr(arrays, "MINMAX_ONE_PASS", 1 << 62)
        return k.summarize(table, offset, context)


@pytest.mark.parametrize("extra", [(), (-1,), (-99,), (-101,), (ROWS,), (ROWS - 1, 0), (-100,), (-2**31,)])
@pytest.mark.parametrize("dtype", ["int32", "int64", "int16"])
def test_labels_fast_path_matches_the_element_wise_path(monkeypatch, extra, dtype):
    for seed in range(3):
        table = labels_table(seed, dtype=dtype, extra=extra if dtype != "int16" or -2**31 not in extra else ())
        for context in (ctx(), ctx(output_rows=None)):
            fast = k.summarize(table, 500, context)
            assert fast == element_wise(monkeypatch, table, context, 500)
            sliced = table.slice(7, 40)  # offsets that do not start at 0
            assert k.summarize(sliced, 7, context) == element_wise(monkeypatch, sliced, context, 7)


def test_fast_path_reports_what_matters():
    """The proved-clean path still finds all-masked rows (empty or every label -100) and label rows of the
    wrong length; a stray -1 among -100s is found (the bounds hand the batch to the element-wise path)."""
    table = labels_table(0)
    summary = k.summarize(table, 0, ctx())
    masked = summary.violations[("src", "train", "labels", k.ALL_MASKED)]
    expected = [r for r, row in enumerate(table.column("labels").to_pylist()) if all(v == -100 for v in row)]
    assert masked.rows == len(expected) and [loc[0] for loc in masked.locations] == expected[: len(masked.locations)]
    assert ("src", "train", "labels", k.LM_LABEL_TOO_LARGE) not in summary.violations
    stray = k.summarize(labels_table(0, extra=(-1,)), 0, ctx())
    assert stray.violations[("src", "train", "labels", k.LM_LABEL_TOO_LARGE)].values == 1
    short = table.set_column(1, "labels", pa.array([row[:-1] if row else row for row in table.column("labels").to_pylist()],
                                                  pa.list_(pa.int32())))
    assert ("src", "train", "labels", k.LENGTH_MISMATCH) in k.summarize(short, 0, ctx()).violations


def test_null_rows_and_pad_equal_to_eos_take_the_element_wise_path(monkeypatch):
    table = labels_table(2, nulls=True)
    assert k.summarize(table, 0, ctx()) == element_wise(monkeypatch, table, ctx())
    eos = ctx(eos_id=7)
    assert k.summarize(labels_table(2), 0, eos) == element_wise(monkeypatch, labels_table(2), eos)


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8", "uint32", "uint64"])
def test_one_pass_minmax_is_numpys(dtype):
    info = np.iinfo(dtype)
    values = np.random.default_rng(0).integers(info.min, info.max, size=arrays.MINMAX_ONE_PASS + 5, dtype=dtype,
                                               endpoint=True)
    values[17], values[-1] = info.min, info.max
    assert arrays.minmax(values) == (values.min().item(), values.max().item())
    assert arrays.minmax(values[::2]) == (values[::2].min().item(), values[::2].max().item())  # strided: numpy


def test_numpy_views_of_arrow_buffers_are_to_numpy():
    for arr in (pa.array(np.arange(100, dtype=np.int32)).slice(13, 50), pa.array([1.5, 2.5, 3.5]).slice(1),
                pa.array(np.arange(10, dtype=np.uint16)), pa.array([1, None, 3]), pa.array([True, False])):
        view = arrays.as_numpy(arr)
        assert view.dtype == arr.to_numpy(zero_copy_only=False).dtype
        assert np.array_equal(view, arr.to_numpy(zero_copy_only=False), equal_nan=True)
    lists = pa.array([[1, 2], [], [3, 4, 5], None, [6]])
    for arr in (lists.slice(0, 3).drop_null(), lists.slice(1, 2), lists):
        assert arrays.row_lengths(arr).tolist() == [len(x) if x is not None else 0 for x in arr.to_pylist()]


def test_parquet_row_groups_read_ahead_in_order(tmp_path):
    table = labels_table(3, n=300)
    pq.write_table(table, tmp_path / "a.parquet", row_group_size=37)
    pq.write_table(table.slice(0, 50), tmp_path / "b.parquet", row_group_size=20)
    (split,) = open_spec(str(tmp_path / "*.parquet"))
    got = pa.concat_tables(list(split.batches(25)))
    assert got.equals(pa.concat_tables([table, table.slice(0, 50)]))
    batches = split.batches(25)
    next(batches)
    batches.close()  # stopping early (--max-rows) leaves no reader thread behind


def test_pretokenized_scan_imports_neither_datasets_nor_pandas(tmp_path):
    """Both cost more than reading 100 M ids (0.8 s and 0.3 s idle); a save_to_disk folder and a parquet file
    of ids without ClassLabel features need neither."""
    import datasets

    table = labels_table(4)
    datasets.Dataset(table).save_to_disk(str(tmp_path / "disk"))
    pq.write_table(table, tmp_path / "ids.parquet")
    code = ("import sys\nfrom hf_vocab_audit.dataset.spec import open_spec\nfrom hf_vocab_audit.dataset import kernel\n"
            "from hf_vocab_audit.dataset import summary as s\n"
            "from hf_vocab_audit.facts.limits import InputLimits\n"
            "ctx = s.ScanContext('src', 'train', (s.ColumnRole('input_ids', kernel.INPUT_IDS), "
            "s.ColumnRole('labels', kernel.LM_LABELS, input_ids_column='input_ids')), "
            "InputLimits(input_rows=1000, output_rows=1000), causal_lm=True)\n"
            "for spec in sys.argv[1:]:\n"
            "    for split in open_spec(spec):\n"
            "        for i, batch in enumerate(split.batches(10)):\n"
            "            kernel.summarize(batch, i * 10, ctx)\n"
            "print(sorted(m for m in ('datasets', 'pandas', 'torch') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "disk"), str(tmp_path / "ids.parquet")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_mapped_pages_released_behind_the_scan_still_read_back(tmp_path):
    """save_to_disk files are memory-mapped and the pages behind the scan dropped (resident memory stays at
    about one record batch); a batch held past that point (the scan keeps its first) reads the same values."""
    import datasets

    rng = np.random.default_rng(5)
    ids = pa.array([rng.integers(0, ROWS, size=300).tolist() for _ in range(3000)], pa.list_(pa.int32()))
    table = pa.table({"input_ids": ids})
    datasets.Dataset(table).save_to_disk(str(tmp_path / "disk"), max_shard_size="400KB")  # several files
    (split,) = open_spec(str(tmp_path / "disk"))
    batches = list(split.batches(700))
    assert pa.concat_tables(batches).equals(table)
