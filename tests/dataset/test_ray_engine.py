"""``--engine ray``: the same report as the local engine on data split over several files and blocks."""

from __future__ import annotations

import json
import sys

import numpy as np
import pyarrow as pa
import pytest
from dataset_builders import write_jsonl, write_parquet

from hf_vocab_audit import AuditError, audit
from hf_vocab_audit.dataset.engines.ray import INSTALL, shift, source_for
from hf_vocab_audit.dataset.kernel import summarize
from hf_vocab_audit.dataset.spec import open_spec
from hf_vocab_audit.dataset.summary import ColumnRole, ScanContext
from hf_vocab_audit.facts.limits import InputLimits
from hf_vocab_audit.formats import render

from .test_jsonl_bad_lines_everywhere import NESTED, PLAIN, bad_lines_said, write_with_bad_lines


@pytest.fixture(scope="session")
def ray_local():
    """One small local Ray instance (2 CPUs, 150 MB object store) shared by the Ray tests."""
    ray = pytest.importorskip("ray", reason="ray is not installed: pip install 'hf-vocab-audit[ray]'")
    ray.init(num_cpus=2, object_store_memory=150 * 1024**2, include_dashboard=False, log_to_driver=False,
             logging_level="ERROR")
    yield ray
    ray.shutdown()


def _report_json(report) -> dict:
    data = json.loads(render(report, "json"))
    data.pop("duration_s")
    data["dataset"].pop("seconds")
    return data


def _every_finding(root):
    """Four specs with every dataset finding, each split spread over several files (and Ray blocks)."""
    rng = np.random.default_rng(0)
    ids = [[2, *rng.integers(5, 100, 6).tolist(), 3] for _ in range(300)]
    for f, name in enumerate("abc"):  # parquet: ids >= 104 rows in files b and c, -100 in c, one too long
        part = [list(r) for r in ids[f * 100:(f + 1) * 100]]
        if f:
            part[37][4] = 200 + f
        if f == 2:
            part[90][2] = -100
            part[95] = [5] * 70
        write_parquet(root / "pq" / "train" / f"{name}.parquet", {"input_ids": part, "label": [0, 1] * 50})
    write_parquet(root / "pq" / "test" / "d.parquet", {"input_ids": ids[:50], "label": [0, 1, 2, 1, 0] * 10})
    for f in range(3):  # JSON lines: 1-based labels and a text longer than 64 positions, in the last file
        rows = [{"sentence": " ".join(["w1", "w2"] * (1 + i % 5)), "label": 1 + (i + f) % 3} for i in range(150)]
        if f == 2:
            rows[120]["sentence"] = " ".join(["w3"] * 80)
        write_jsonl(root / "jl" / "train" / f"part-{f}.jsonl", rows)
    for f in range(2):  # text lines (empty lines kept), a too-long line in the second file
        lines = ["w1 w2 w3", "", "w2"] * 200
        if f:
            lines[333] = " ".join(["w2"] * 90)
        (root / "txt" / "train").mkdir(parents=True, exist_ok=True)
        (root / "txt" / "train" / f"{f}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    import datasets  # save_to_disk: read from the datasets object, with an explicit row index column

    big = [[2, 5, 6, 3]] * 1000
    big[17], big[901] = [2, 150, 3], [2, -100, 3]
    datasets.DatasetDict({
        "train": datasets.Dataset.from_dict({"input_ids": big, "label": [0, 1] * 500}),
        "test": datasets.Dataset.from_dict({"input_ids": big[:40], "label": [2] * 40}),
    }).save_to_disk(str(root / "saved"))
    return [root / "pq", root / "jl", root / "txt" / "train" / "*.txt", root / "pq" / "*" / "*.parquet",
            root / "saved"]


def test_ray_report_equals_local_report_on_every_dataset_finding(ray_local, bert_cls, tmp_path):
    specs = _every_finding(tmp_path)
    local = audit(bert_cls, datasets=specs, batch_size=7)
    ray = audit(bert_cls, datasets=specs, batch_size=7, engine="ray")
    codes = {f.code for f in local.findings}
    assert {"HVA501", "HVA502", "HVA504", "HVA511", "HVA514"} <= codes
    rows = {(f.code, f.location.file, f.location.split, f.location.row) for f in ray.findings}
    assert ("HVA501", str(tmp_path / "pq"), "train", 137) in rows  # file b's row 37 is the split's row 137
    assert ("HVA501", str(tmp_path / "saved"), "train", 17) in rows
    assert _report_json(ray) == _report_json(local)


def test_ray_max_rows_and_batch_size_match_local(ray_local, bert_cls, tmp_path):
    specs = _every_finding(tmp_path)
    local = audit(bert_cls, datasets=specs, batch_size=13, max_rows=250)
    ray = audit(bert_cls, datasets=specs, batch_size=50, max_rows=250, engine="ray", progress=True)
    split = next(s for s in ray.to_dict()["dataset"]["splits"] if s["source"] == str(tmp_path / "pq"))
    assert split["rows"] == 250 and split["truncated"] is True
    assert _report_json(ray) == _report_json(local)


def test_cli_engine_ray_exit_codes(ray_local, run_cli, bert_cls, tmp_path):
    bad = write_jsonl(tmp_path / "bad" / "t.jsonl", [{"text": "w1", "label": v} for v in (0, 1, 3)])
    code, out, _ = run_cli("check", bert_cls, "--dataset", bad, "--engine", "ray", "--format", "json")
    assert code == 1
    (f,) = [f for f in json.loads(out)["findings"] if f["code"] == "HVA510"]
    assert f["location"]["row"] == 2
    good = write_jsonl(tmp_path / "good" / "t.jsonl", [{"text": "w1", "label": v} for v in (0, 1, 2)])
    assert run_cli("check", bert_cls, "--dataset", good, "--engine", "ray", "--select", "HVA5")[0] == 0


def test_missing_ray_exits_2_with_the_install_command(run_cli, bert_cls, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    data = write_jsonl(tmp_path / "t.jsonl", [{"text": "w1", "label": 0}])
    code, _, err = run_cli("check", bert_cls, "--dataset", data, "--engine", "ray")
    assert code == 2 and INSTALL in err and err.strip().count("\n") == 0
    with pytest.raises(AuditError, match="unknown engine 'spark'"):
        audit(bert_cls, datasets=[data], engine="spark")


def test_unreachable_cluster_is_one_line_exit_2(run_cli, bert_cls, tmp_path):
    pytest.importorskip("ray", reason="ray is not installed: pip install 'hf-vocab-audit[ray]'")
    data = write_jsonl(tmp_path / "t.jsonl", [{"text": "w1", "label": 0}])
    code, _, err = run_cli("check", bert_cls, "--dataset", data, "--engine", "ray", "--ray-address", "127.0.0.1:1")
    assert code == 2 and err.strip() == ("hf-vocab-audit: error: --engine ray: cannot reach the Ray cluster at "
                                         "127.0.0.1:1: Connection refused")


def test_shift_moves_every_row_like_a_later_offset():
    batch = pa.table({"input_ids": [[1, 200, 3], [-100, 2], [5, 6, 7, 8]], "label": [0, 9, -1]})
    ctx = ScanContext("s", "train", (ColumnRole("input_ids", "input_ids"), ColumnRole("label", "class_label")),
                      InputLimits(input_rows=104, positions=3, num_labels=3))
    assert shift(summarize(batch, 0, ctx), 1234) == summarize(batch, 1234, ctx)


def test_ray_readers_are_chosen_from_the_resolved_files(tmp_path):
    write_parquet(tmp_path / "pq" / "train" / "b.parquet", {"x": [1]})
    write_parquet(tmp_path / "pq" / "train" / "a.parquet", {"x": [1]})
    src = source_for(open_spec(str(tmp_path / "pq"))[0].resolved, "train", None)
    assert src.reader == "parquet" and [p.rsplit("/", 1)[1] for p in src.files] == ["a.parquet", "b.parquet"]
    (tmp_path / "t.csv").write_text("x\n1\n", encoding="utf-8")
    assert source_for(open_spec(str(tmp_path / "t.csv"))[0].resolved, "train", None).reader == "datasets"


def test_ray_label_alignment_equals_local(ray_local, tmp_path):
    from builders import checkpoint

    model = checkpoint(tmp_path / "tok", "bert-tok", 104, model={"num_labels": 3})
    for f in range(3):  # row 40 of file 2 (row 240 of the split): labels not truncated with the inputs
        ids = [[2, 7, 8, 3]] * 100
        labels = [[-100, 1, 2, -100]] * 100
        if f == 2:
            ids, labels = ids.copy(), labels.copy()
            ids[40], labels[40] = [2, 7, 3], [-100, 1, 2, 0, -100]
        write_parquet(tmp_path / "d" / "train" / f"{f}.parquet", {"input_ids": ids, "labels": labels})
    local = audit(model, datasets=[str(tmp_path / "d")], batch_size=30)
    ray = audit(model, datasets=[str(tmp_path / "d")], batch_size=30, engine="ray")
    (f,) = [f for f in ray.findings if f.code == "HVA517"]
    assert f.location.row == 240 and "labels 5, input_ids 3" in f.message
    assert _report_json(ray) == _report_json(local)


def _ray_data_forbidden(*args, **kwargs):
    raise AssertionError("a local parquet/JSON-lines/text split went through Ray Data")


def test_ray_tasks_cut_files_anywhere_and_keep_global_rows(ray_local, bert_cls, tmp_path, monkeypatch):
    """Units of 64 bytes: rows straddle the cuts, files hold several units, parquet units are row groups."""
    import pyarrow.parquet as pq

    from hf_vocab_audit.dataset.engines import ray as ray_engine
    from hf_vocab_audit.dataset.engines import ray_tasks

    monkeypatch.setattr(ray_tasks, "MIN_UNIT_BYTES", 64)
    monkeypatch.setattr(ray_engine, "_scan_ray_data", _ray_data_forbidden)
    specs = _every_finding(tmp_path)[:4]
    groups = tmp_path / "groups" / "train.parquet"  # 10 row groups; row 77 out of range
    ids = [[2, 5, 6, 3]] * 100
    ids[77] = [2, 150, 3]
    groups.parent.mkdir()
    pq.write_table(pa.table({"input_ids": ids, "label": [0, 1] * 50}), groups, row_group_size=10)
    odd = tmp_path / "odd" / "lines.txt"  # line ends datasets' text builder does not split at
    odd.parent.mkdir()
    odd.write_bytes(("w1\x0bw2\r\nw3\u2028w2\rw1\n\n" * 40 + " ".join(["w2"] * 90)).encode("utf-8"))
    specs += [groups, odd]
    files = [str(p) for p in sorted((tmp_path / "jl" / "train").iterdir())]
    units = ray_tasks.plan_units("jsonl", tuple(files), 2)
    assert len(units) > 2 * len(files) and [u.path for u in units] == sorted(u.path for u in units)
    for path in files:  # each file covered once, range after range
        mine = [u for u in units if u.path == path]
        assert mine[0].start == 0 and all(a.stop == b.start for a, b in zip(mine, mine[1:]))
    groups_units = ray_tasks.plan_units("parquet", (str(groups),), 2)  # consecutive row groups
    assert len(groups_units) > 1 and [(u.start, u.stop) for u in groups_units][-1][1] == 10
    assert all(a.stop == b.start for a, b in zip(groups_units, groups_units[1:]))
    for max_rows in (None, 333):  # 333: the limit falls inside a unit
        local = audit(bert_cls, datasets=specs, batch_size=7, max_rows=max_rows)
        ray = audit(bert_cls, datasets=specs, batch_size=7, max_rows=max_rows, engine="ray")
        assert _report_json(ray) == _report_json(local)
    rows = {(f.code, f.location.file, f.location.row) for f in ray.findings}
    assert ("HVA501", str(groups), 77) in rows


def test_json_lines_that_need_the_json_builder_go_through_ray_data(ray_local, bert_cls, tmp_path, monkeypatch):
    from hf_vocab_audit.dataset.engines import ray as ray_engine

    calls = []
    through = ray_engine._scan_ray_data

    def spy(*args, **kwargs):
        calls.append(args[0].spec)  # the resolved SPEC the local side opened
        return through(*args, **kwargs)

    monkeypatch.setattr(ray_engine, "_scan_ray_data", spy)
    data = write_jsonl(tmp_path / "nested.jsonl", [{"text": "w1 w2", "label": i % 4, "meta": {}}
                                                   for i in range(30)])
    local = audit(bert_cls, datasets=[data])
    ray = audit(bert_cls, datasets=[data], engine="ray", progress=True)  # the progress line starts over
    assert calls == [str(data)]
    assert _report_json(ray) == _report_json(local)
    mixed = write_jsonl(tmp_path / "mixed.jsonl", [{"text": "w1", "label": v} for v in (1, "x", 2)])
    local, ray = audit(bert_cls, datasets=[mixed]), audit(bert_cls, datasets=[mixed], engine="ray")
    assert calls[-1] == str(mixed) and "HVA530" in {f.code for f in ray.findings}
    assert _report_json(ray) == _report_json(local)


@pytest.mark.parametrize("rows", [PLAIN, NESTED], ids=["ray-tasks", "ray-data"])
def test_engine_ray_reports_bad_lines_as_the_local_engine(ray_local, bert_cls, tmp_path, monkeypatch, rows):
    """Plain rows go to Ray tasks (units of 64 bytes: bad lines in several units, numbered in the file); rows
    that need the builder go to Ray Data. Either way the report equals the local engine's."""
    from hf_vocab_audit.dataset.engines import ray_tasks

    monkeypatch.setattr(ray_tasks, "MIN_UNIT_BYTES", 64)
    data = write_with_bad_lines(tmp_path / "data.jsonl", rows, {1: "{", 9: "oops", 30: "7"})
    local = audit(bert_cls, datasets=[data])
    ray = audit(bert_cls, datasets=[data], engine="ray")
    assert "3 line(s) are not JSON rows" in bad_lines_said(local)
    assert ray.exit_code() == local.exit_code() == 1
    assert _report_json(ray) == _report_json(local)
