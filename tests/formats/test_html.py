"""The HTML report as a person sees it: rendered by headless Chromium, screenshot kept as an artifact."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from weights_builders import llama_with_rows

from hf_vocab_audit import audit
from hf_vocab_audit.formats import html, plots, render

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(tempfile.gettempdir()) / "hf-vocab-audit-artifacts"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="headless Chromium is not installed (apt-get install -y chromium; .ci/run does it)"
)
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def chromium(page: Path, tmp: Path, *, screenshot: Path | None = None) -> str:
    """The DOM after rendering ``page``; also a 1280x2000 screenshot when asked."""
    base = [CHROMIUM, *FLAGS, f"--user-data-dir={tmp / 'profile'}"]
    if screenshot is not None:
        subprocess.run([*base, f"--screenshot={screenshot}", "--window-size=1280,2000", page.as_uri()],
                       check=True, capture_output=True, timeout=120)
    done = subprocess.run([*base, "--dump-dom", page.as_uri()], check=True, capture_output=True, timeout=120,
                          text=True)
    return done.stdout


@pytest.fixture(scope="module")
def broken_report(tmp_path_factory):
    folder = llama_with_rows(tmp_path_factory.mktemp("broken"), zero=["<|im_start|>", "<|im_end|>"],
                             pad_to_multiple_of=64)
    return audit(folder, weights=True)


@needs_chromium
def test_broken_checkpoint_renders_with_its_plots(broken_report, tmp_path):
    page = tmp_path / "report.html"
    page.write_text(render(broken_report.judged("warning"), "html"), encoding="utf-8")
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "broken-llama-report.png"
    dom = chromium(page, tmp_path, screenshot=shot)
    print(f"screenshot: {shot}", file=sys.stderr)
    assert shot.stat().st_size > 10_000 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    title = re.search(r"<title>(.*?)</title>", dom).group(1)
    assert title.endswith("FAIL, 3 finding(s)")  # 2 untrained chat markers + HVA105 (padding rows, info)
    assert re.search(r'id="findings-count">3<', dom)
    rows = re.findall(r'<tr class="finding (\w+)', dom)
    assert rows == ["warning", "warning", "info"]
    assert "&lt;|im_end|&gt;" in dom and "HVA601" in dom
    images = re.findall(r'<img alt="([^"]*)" src="data:image/svg\+xml;base64,', dom)
    assert len(images) == 2  # vocabulary bar + row-norm histograms
    assert any("row norms" in alt for alt in images)
    assert "http://" not in page.read_text() and "https://" not in page.read_text()


@needs_chromium
def test_committed_example_renders(tmp_path):
    page = ROOT / "reports" / "example-report.html"
    dom = chromium(page, tmp_path)
    assert "example/broken-chat-llama" in dom
    assert len(re.findall(r"<img ", dom)) == 2
    assert re.search(r'id="findings-count">\d+<', dom)


def test_same_report_same_bytes(broken_report):
    assert render(broken_report, "html") == render(broken_report, "html")


def test_without_matplotlib_the_report_says_so(broken_report, monkeypatch):
    monkeypatch.setattr(plots, "available", lambda: False)
    page = html.render(broken_report.judged("error"))
    assert 'id="no-plots"' in page and "hf-vocab-audit[report]" in page
    assert "<img" not in page
    assert page.count('<tr class="finding') == 3


def test_dataset_section_is_plotted():
    dataset = {
        "id_columns": [{"split": "train", "column": "input_ids", "limit": 100,
                        "edges": [0, 25, 50, 75, 100, 125], "counts": [40, 31, 20, 9, 3]}],
        "label_counts": [{"split": "train", "column": "labels", "num_labels": 2,
                          "counts": {"0": 50, "1": 40, "2": 3}},
                         {"split": "validation", "column": "labels", "num_labels": 2, "counts": {"0": 9, "1": 8}}],
        "lengths": [{"split": "train", "column": "input_ids", "limit": 128,
                     "edges": [0, 32, 64, 96, 128, 160], "counts": [10, 30, 25, 8, 2]}],
    }
    figures = plots.dataset_plots(dataset)
    assert [caption for caption, _svg in figures] == [
        "train/input_ids: ids against 100 rows",
        "label value counts per split",
        "train/input_ids: lengths against 128 usable positions",
    ]
    assert all(svg.lstrip().startswith("<?xml") and "<svg" in svg for _c, svg in figures)
    assert plots.dataset_plots(None) == [] and plots.dataset_plots({"id_columns": [{"edges": [0]}]}) == []


def test_dataset_plots_reach_the_page(broken_report):
    import dataclasses

    from hf_vocab_audit.core.sections import ColumnSection, DatasetSection, Histogram, SplitSection

    column = ColumnSection("input_ids", 7, 900, 0, 0, 99, max_length=180,
                           length_histogram=Histogram(128, (0, 64, 192), (3, 4)))
    dataset = DatasetSection(("d.jsonl",), 7, 0.1, {"positions": 128}, None,
                             (SplitSection("d.jsonl", "train", 7, False, {"input_ids": column}),))
    page = html.render(dataclasses.replace(broken_report, dataset=dataset))
    assert page.count("<img ") == 3 and "usable positions" in page


@pytest.mark.parametrize("rotary", [False, True], ids=["absolute", "rotary"])
def test_length_plot_shades_only_a_hard_limit(rotary):
    """A rotary model runs rows past max_position_embeddings (HVA505 is info): its plot draws a line there,
    not an out-of-range region; an absolute-position limit is shaded."""
    from hf_vocab_audit.core.sections import ColumnSection, DatasetSection, Histogram, SplitSection

    column = ColumnSection("input_ids", 7, 900, 0, 0, 99, max_length=180,
                           length_histogram=Histogram(128, (0, 64, 128, 192), (3, 2, 2)))
    limits = {"positions": None, "rotary_positions": 128} if rotary else {"positions": 128}
    dataset = DatasetSection(("d.jsonl",), 7, 0.1, limits, None,
                             (SplitSection("d.jsonl", "train", 7, False, {"input_ids": column}),))
    ((caption, svg),) = plots.dataset_plots(dataset)
    assert ("rotary: not a limit" in caption) is rotary and ("usable positions" in caption) is not rotary
    assert ("out of range" in svg) is not rotary
    assert (plots.COLORS["bad"] in svg) is not rotary


def test_log_axes_label_their_ticks_in_plain_text(tmp_path):
    """text.parse_math is off (labels are untrusted), so mathtext tick labels would print as
    `$\\mathdefault{10^{3}}$`."""
    report = audit(llama_with_rows(tmp_path, zero=["<|im_end|>"]), weights=True)
    svg = plots.norm_histograms(report.weights)
    labels = re.findall(r"<!-- (.*?) -->", svg)
    assert "rows" in labels and not any("$" in label or "mathdefault" in label for label in labels)


def test_example_regenerates(tmp_path):
    sys.path.insert(0, str(ROOT / "reports"))
    from make_example import regenerate

    out = regenerate(tmp_path / "example.html")
    text = out.read_text()
    committed = (ROOT / "reports" / "example-report.html").read_text()
    codes = sorted(re.findall(r"<code>(HVA\d{3})</code>", text))
    assert codes == sorted(re.findall(r"<code>(HVA\d{3})</code>", committed))
    assert codes == ["HVA105", "HVA601", "HVA601", "HVA602", "HVA603"]


def test_cli_writes_html(broken_report, run_cli, tmp_path):
    out = tmp_path / "r.html"
    code, _out, _err = run_cli("check", broken_report.target, "--weights", "--format", "html", "--output-file", out)
    assert code == 0
    assert out.read_text().startswith("<!DOCTYPE html>")


def test_label_plot_orders_numbers_and_keeps_odd_label_strings():
    pytest.importorskip("matplotlib")
    from hf_vocab_audit.formats import plots

    section = {"label_counts": [{"split": "train", "column": "label", "num_labels": 2,
                                 "counts": {"1": 3, "0": 5, "²": 1, "-100": 2, "7": 1}}]}
    (caption, svg), = plots.dataset_plots(section)
    assert caption == "label value counts per split" and svg.lstrip().startswith("<")
