"""The dataset section carries mergeable histograms the HTML report plots."""

from __future__ import annotations

import numpy as np
from dataset_builders import write_jsonl

from hf_vocab_audit import audit
from hf_vocab_audit.dataset.summary import HIST_BINS, HIST_OVER, histogram
from hf_vocab_audit.formats import plots, render


def test_histogram_puts_the_limit_on_an_edge_and_merges_by_addition():
    values = np.array([0, 3, 99, 100, 103, 500, -100])
    counts = histogram(values, 100)
    assert len(counts) == HIST_BINS + HIST_OVER and sum(counts) == 6  # negatives are left out
    assert sum(counts[:HIST_BINS]) == 3 and sum(counts[HIST_BINS:]) == 3  # 100, 103, 500 past the limit
    assert counts[-1] == 1  # 500 lands in the open-ended last bin
    a, b = histogram(values[:3], 100), histogram(values[3:], 100)
    assert tuple(x + y for x, y in zip(a, b, strict=True)) == counts


def test_input_ids_histograms_reach_the_report_and_the_html(llama_lm, tmp_path):
    rows = [{"input_ids": [1, 5, 7, 2]}, {"input_ids": [1, 150, 2]}, {"input_ids": [1, 103, 103, 9, 2]}]
    data = write_jsonl(tmp_path / "train.jsonl", rows)
    assert "id_histogram" not in audit(llama_lm, datasets=[str(data)]).to_dict()["dataset"]["splits"][0]["columns"][
        "input_ids"]  # only computed for the HTML report
    report = audit(llama_lm, datasets=[str(data)], dataset_histograms=True)
    (split,) = report.to_dict()["dataset"]["splits"]
    column = split["columns"]["input_ids"]
    ids = column["id_histogram"]
    assert ids["limit"] == 104 and sum(ids["counts"]) == 12
    assert sum(ids["counts"][HIST_BINS:]) == 1  # the one id >= 104 rows
    assert ids["edges"][HIST_BINS] == 104
    lengths = column["length_histogram"]
    assert lengths["limit"] == 128 and sum(lengths["counts"]) == 3
    entries = plots.plot_entries(report.dataset)
    assert [e["column"] for e in entries["id_columns"]] == ["input_ids"]
    html = render(report, "html")
    assert "train/input_ids: ids against 104 rows" in html
    assert "train/input_ids: lengths beside max_position_embeddings 128 (rotary: not a limit)" in html  # Llama


def test_html_format_asks_the_scan_for_histograms(llama_lm, tmp_path, run_cli):
    data = write_jsonl(tmp_path / "train.jsonl", [{"input_ids": [1, 5, 7, 2]}, {"input_ids": [1, 150, 2]}])
    code, out, _ = run_cli("check", llama_lm, "--dataset", data, "--format", "html")
    assert code == 1 and "train/input_ids: ids against 104 rows" in out
