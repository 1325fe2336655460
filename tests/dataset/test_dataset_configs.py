"""A data folder whose README declares several configs: ``load_dataset(folder)`` reads only the default one (or
refuses to choose), so a scan that followed it would never see a second config's ids. Every config's splits
are scanned (named ``config/split``) unless the operator names one with ``--dataset-config``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hf_vocab_audit import audit

FRONT = """---
configs:
- config_name: good
  default: true
  data_files:
  - split: train
    path: good/train.jsonl
- config_name: {second}
  data_files:
  - split: train
    path: {second}/train.jsonl
  - split: test
    path: {second}/test.jsonl
---
# a dataset
"""


def two_configs(root: Path, second_ids: list[int], second: str = "extra") -> Path:
    """``good`` (the default: text) and ``second`` (pre-tokenized ``input_ids``) in one folder's README."""
    for name, rows in (("good", [{"text": "w1 w2"}]), (second, [{"input_ids": second_ids}])):
        (root / name).mkdir(parents=True)
        for split in ("train", "test"):
            (root / name / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (root / "README.md").write_text(FRONT.format(second=second))
    return root


def _default_rows(folder: Path) -> list[dict]:
    import datasets

    return list(datasets.load_dataset(str(folder), streaming=True)["train"])


def test_the_default_config_alone_is_what_load_dataset_reads(tmp_path: Path) -> None:
    folder = two_configs(tmp_path / "ds", [1, 2, 500])
    assert _default_rows(folder) == [{"text": "w1 w2"}]  # the second config's rows never reach a default load


def test_a_second_config_with_ids_past_the_rows_fails(llama_lm: Path, tmp_path: Path) -> None:
    folder = two_configs(tmp_path / "ds", [1, 2, 500])
    report = audit(llama_lm, datasets=[str(folder)])
    assert report.exit_code() == 1
    hits = [f for f in report.failing() if f.location.split is not None]
    assert {f.location.split for f in hits} == {"extra/train", "extra/test"}, [str(f.location) for f in hits]
    scanned = {s.split for s in report.coverage.datasets}
    assert scanned == {"good/train", "extra/train", "extra/test"}


def test_every_config_healthy_is_quiet(llama_lm: Path, tmp_path: Path) -> None:
    folder = two_configs(tmp_path / "ds", [1, 2, 50])
    report = audit(llama_lm, datasets=[str(folder)])
    assert report.exit_code() == 0, [f.message for f in report.findings]
    assert report.coverage.not_examined == ()
    assert len(report.coverage.datasets) == 3


def test_a_config_the_operator_names_is_the_one_scanned(llama_lm: Path, tmp_path: Path) -> None:
    folder = two_configs(tmp_path / "ds", [1, 2, 500])
    report = audit(llama_lm, datasets=[str(folder)], dataset_config="good")
    assert report.exit_code() == 0 and [s.split for s in report.coverage.datasets] == ["train"]
    assert audit(llama_lm, datasets=[str(folder)], dataset_config="extra").exit_code() == 1


@pytest.mark.parametrize(("chosen", "scanned"), [(["train"], {"good/train", "extra/train"}),
                                                 (["extra/test"], {"extra/test"})])
def test_split_takes_a_split_in_each_config_or_one_by_its_full_name(llama_lm: Path, tmp_path: Path,
                                                                    chosen: list[str], scanned: set[str]) -> None:
    folder = two_configs(tmp_path / "ds", [1, 2, 500])
    report = audit(llama_lm, datasets=[str(folder)], splits=chosen)
    assert {s.split for s in report.coverage.datasets} == scanned
    assert report.exit_code() == 1


def test_the_cli_fails_on_the_second_config(llama_lm: Path, tmp_path: Path, run_cli) -> None:
    folder = two_configs(tmp_path / "ds", [1, 2, 500])
    code, out, _ = run_cli("check", llama_lm, "--dataset", folder)
    assert code == 1 and "extra/train" in out


def test_the_ray_engine_reads_each_config_as_the_local_one(llama_lm: Path, tmp_path: Path) -> None:
    """Ray reads a config's split by its own name in its config (``split_name``), not by ``config/split``."""
    ray = pytest.importorskip("ray", reason="ray is not installed: pip install 'hf-vocab-audit[ray]'")
    folder = two_configs(tmp_path / "ds", [1, 2, 500])
    local = audit(llama_lm, datasets=[str(folder)])
    started = not ray.is_initialized()  # another module of this worker may have left its instance up
    if started:
        ray.init(num_cpus=1, object_store_memory=100 * 1024**2, include_dashboard=False, log_to_driver=False,
                 logging_level="ERROR")
    try:
        on_ray = audit(llama_lm, datasets=[str(folder)], engine="ray")
    finally:
        if started:
            ray.shutdown()
    assert on_ray.exit_code() == local.exit_code() == 1
    assert _located(on_ray) == _located(local)


def _located(report) -> list[tuple]:
    return sorted((f.code, f.location.split, f.location.row) for f in report.findings)
