"""The HTML report as a person reads it, at a desktop (1280 px) and a phone (390 px) width, and in a
notebook cell (``report._repr_html_()``). Screenshots are kept as artifacts to look at."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from builders import checkpoint
from dataset_builders import write_jsonl

import hf_vocab_audit as hva
from hf_vocab_audit.demo import build_demo_checkpoint
from hf_vocab_audit.formats import html, plots

from .test_html import ARTIFACTS, CHROMIUM, FLAGS, needs_chromium


def shoot(page, tmp, width: int, name: str) -> str:
    """A screenshot of ``page`` at ``width`` px (kept under the artifacts folder) and the rendered DOM."""
    base = [CHROMIUM, *FLAGS, f"--user-data-dir={tmp / 'profile'}"]
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / f"{name}-{width}.png"
    subprocess.run([*base, f"--screenshot={shot}", f"--window-size={width},2400", page.as_uri()], check=True,
                   capture_output=True, timeout=120)
    print(f"screenshot: {shot}", file=sys.stderr)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
    return subprocess.run([*base, "--dump-dom", page.as_uri()], check=True, capture_output=True, timeout=120,
                          text=True).stdout


@pytest.fixture(scope="module")
def demo_report(tmp_path_factory):
    return hva.audit(build_demo_checkpoint(tmp_path_factory.mktemp("demo") / "m")).judged()


@needs_chromium
@pytest.mark.parametrize("width", [1280, 390])
def test_the_page_leads_with_the_cause_at_both_widths(demo_report, tmp_path, width):
    page = tmp_path / "report.html"
    page.write_text(html.render(demo_report), encoding="utf-8")
    dom = shoot(page, tmp_path, width, "demo-report")
    causes = dom.index('id="causes"')
    assert causes < dom.index('id="findings"') and causes < dom.index('id="coverage"')
    assert "<code>IndexError: index out of range in self</code>" in dom  # backticks set as code
    assert "`" not in re.sub(r"<img[^>]*>", "", dom.split('id="findings"')[1])  # no literal backticks left
    header = re.search(r'<table id="findings"><thead><tr>(.*?)</tr>', dom).group(1)
    assert header.count("<th>") == 3  # message, location, how to fix and --fix share one wide cell
    special = re.search(r'<table id="special-tokens">(.*?)</table>', dom).group(1)
    assert re.search(r"<td>eos</td><td class=\"bad\">260</td>", special)  # legible, and red past the rows


def test_bars_only_for_what_the_model_has(tmp_path):
    folder = checkpoint(tmp_path / "cls", "bert-cls", 104)  # tied config, but a classifier: no lm_head
    facts = hva.audit(folder).facts
    assert [label for label, _ in plots._vocab_sizes(facts)] == [
        "tokenizer ids (max id + 1)", "embedding rows", "config vocab_size"]
    lm = hva.audit(checkpoint(tmp_path / "mlm", "bert", 104)).facts  # a tied MLM head: the embedding itself
    assert [label for label, _ in plots._vocab_sizes(lm)] == [
        "tokenizer ids (max id + 1)", "embedding rows (= tied lm_head)", "config vocab_size"]
    untied = hva.audit(checkpoint(tmp_path / "llama", "llama", 104)).facts
    assert [label for label, _ in plots._vocab_sizes(untied)] == [
        "tokenizer ids (max id + 1)", "embedding rows", "lm_head rows", "config vocab_size"]


@pytest.mark.parametrize(("output_rows", "bars"), [
    (None, [("tokenizer ids (max id + 1)", 64), ("embedding rows (= tied lm_head)", 64)]),  # llama.cpp ties
    (40, [("tokenizer ids (max id + 1)", 64), ("embedding rows", 64), ("lm_head rows", 40)]),
])
def test_a_gguf_without_an_output_tensor_draws_no_lm_head_of_its_own(tmp_path, output_rows, bars):
    """A GGUF with no ``output.weight`` uses ``token_embd`` as its output: no second bar for a matrix it lacks."""
    from gguf_builders import write_gguf

    report = hva.audit(write_gguf(tmp_path / "m.gguf", output_rows=output_rows))
    assert plots._vocab_sizes(report.facts) == bars
    if plots.available():
        page = html.render(report)
        alt = re.search(r'<img alt="(Vocabulary: [^"]*)"', page).group(1)
        assert alt.startswith("Vocabulary: " + ", ".join(label for label, _ in bars) + ";")


def test_the_label_axis_starts_at_zero_and_out_of_range_values_are_red():
    pytest.importorskip("matplotlib")
    import matplotlib

    entries = [{"split": "train", "column": "label", "num_labels": 3, "counts": {"1": 4, "2": 5, "3": 2}}]
    with matplotlib.rc_context(plots.RC):
        fig = plots._draw_labels(entries)
    ax = fig.axes[0]
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert ticks == ["0", "1", "2", "3"]  # label 0 is on the axis although no row has it
    colors = {t.get_text(): t.get_color() for t in ax.get_xticklabels()}
    assert colors["3"] == plots.COLORS["bad"] and colors["0"] != plots.COLORS["bad"]
    bars = ax.patches
    assert matplotlib.colors.to_hex(bars[3].get_facecolor()) == plots.COLORS["bad"]
    assert matplotlib.colors.to_hex(bars[1].get_facecolor()) != plots.COLORS["bad"]


def test_a_report_prints_and_shows_itself_in_a_notebook(demo_report):
    assert str(demo_report) == hva.render(demo_report, "text").replace("\x1b", "") or "\x1b" not in str(demo_report)
    assert str(demo_report).startswith("hf-vocab-audit ") and "CAUSE: " in str(demo_report)
    assert demo_report.summary() == f"{demo_report.target}: FAIL: 5 error(s), 1 warning(s), 0 info (fail-on error)"
    assert "\n" not in demo_report.summary() and repr(demo_report) == f"<Report {demo_report.summary()}>"
    cell = demo_report._repr_html_()
    assert cell.startswith('<div class="hva"><style>') and "<html" not in cell and "<body" not in cell
    style = re.search(r"<style>(.*?)</style>", cell, re.S).group(1)
    selectors = [rule.split("{")[0] for rule in re.findall(r"[^{}]+\{[^}]*\}", style) if "@media" not in rule]
    assert all(s.strip().startswith(".hva") for part in selectors for s in part.split(",") if s.strip())
    assert 'id="verdict">FAIL<' in cell and 'id="causes"' in cell and "src=\"http" not in cell


@needs_chromium
def test_the_notebook_cell_renders(demo_report, tmp_path):
    # A notebook output area: the cell's HTML inside the page's own markup and styles.
    page = tmp_path / "notebook.html"
    page.write_text("<!DOCTYPE html><html><head><meta charset='utf-8'><style>table{border:9px solid green}"
                    "</style></head><body><div class='output_area'>" + demo_report._repr_html_()
                    + "</div></body></html>", encoding="utf-8")
    dom = shoot(page, tmp_path, 1280, "notebook-cell")
    assert 'id="verdict">FAIL<' in dom and "tokens-added-without-resize" in dom


def test_in_memory_reports_name_objects_not_files(tmp_path):
    import transformers

    folder = checkpoint(tmp_path / "m", "llama", rows=104, pad=None, model={"pad_token_id": None})
    model = transformers.AutoModelForCausalLM.from_pretrained(folder)
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    tok.add_special_tokens({"pad_token": "<pad>"})
    model.generation_config.pad_token_id = 104
    report = hva.audit(model=model, tokenizer=tok)
    files = {f.location.file for f in report.findings}
    assert files and not any(name.endswith(".json") for name in files if name), files


def test_the_label_plot_reaches_the_page(bert_cls, tmp_path):
    data = write_jsonl(tmp_path / "t.jsonl", [{"text": "w1", "label": v} for v in (1, 2, 3, 1)])
    report = hva.audit(bert_cls, datasets=[str(data)], select=["HVA5"], dataset_histograms=True)
    assert "label value counts per split" in html.render(report.judged())
