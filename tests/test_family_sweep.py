"""A bounded sample of the family sweep (``scripts/family_sweep.py``) in the suite: the sweep's own code on a
few diverse architectures and heads, every case's expected verdict decided by running the model on CPU, and
the audit must agree on each (the whole sweep's table is docs/families.md)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _load_sweep():
    spec = importlib.util.spec_from_file_location("family_sweep", ROOT / "scripts" / "family_sweep.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["family_sweep"] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


sweep = _load_sweep()

# One head each, chosen for diversity: rotary decoder, learned absolute positions (with and without
# RoBERTa's reserved rows), relative positions (T5), DeBERTa-v2, CLIP's text tower (`position_embedding`).
SAMPLE = [
    ("llama", "causal-lm"),
    ("gpt2", "causal-lm"),
    ("bert", "masked-lm"),
    ("roberta", "seq-cls"),
    ("t5", "seq2seq-lm"),
    ("deberta-v2", "masked-lm"),
    ("clip_text_model", "text-encoder"),
]


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory):
    import warnings

    import transformers

    transformers.logging.set_verbosity_error()
    result = sweep.Sweep()
    names = {(mt, head): cls for mt, head, cls in sweep.targets({mt for mt, _ in SAMPLE})}
    for model_type, head in SAMPLE:
        work = tmp_path_factory.mktemp(model_type)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sweep.sweep_one(work, model_type, head, names[(model_type, head)], result)
    return result


def test_every_sampled_pair_is_built_and_runs(swept) -> None:
    assert swept.excluded == {}
    assert {(c.model_type, c.head) for c in swept.cases} == set(SAMPLE)


@pytest.mark.parametrize(("model_type", "head"), SAMPLE)
def test_the_audit_agrees_with_execution(swept, model_type: str, head: str) -> None:
    cases = [c for c in swept.cases if (c.model_type, c.head) == (model_type, head)]
    assert [c.case for c in cases] == list(sweep.CASES)
    wrong = [(c.case, c.execution, c.tool) for c in cases if not c.agree]
    assert wrong == []


def test_the_sample_has_both_verdicts(swept) -> None:
    """The oracle is not trivially 'clean': tokens added without a resize fail at run time, padding does not."""
    by_case = {c.case: set() for c in swept.cases}
    for c in swept.cases:
        by_case[c.case].add(c.execution.split(":")[0])
    assert by_case["added-no-resize"] == {"fails"}
    assert by_case["padded"] == {"clean"}
    assert by_case["max-length-past-positions"] == {"clean", "fails"}  # rotary/relative run, tables do not


def test_write_replaces_only_the_generated_section(tmp_path: Path, swept) -> None:
    doc = tmp_path / "families.md"
    doc.write_text("# Families\n\nhand-written\n")
    sweep.write(sweep.render(swept), doc)
    first = doc.read_text()
    assert first.startswith("# Families\n\nhand-written\n") and first.count(sweep.BEGIN) == 1
    sweep.write(sweep.render(swept) + "", doc)
    doc.write_text(doc.read_text() + "\nafter\n")
    sweep.write(sweep.render(swept), doc)
    again = doc.read_text()
    assert again.count(sweep.BEGIN) == 1 and again.endswith("\nafter\n")
    assert "| llama | causal-lm | healthy | clean | clean | yes |" in again


# Facts the audit derives instead of listing, each where the sweep found it wrong: Blenderbot's position table
# has max_position_embeddings rows and no offset (BART's has 2 more, reserved); CTRL's vocabulary matrix is
# `transformer.w`, a name no table lists, found by its vocab_size rows. A healthy pair stays quiet, a broken
# one fires, both decided by execution.
DERIVED = [
    ("blenderbot", "seq2seq-lm", ("healthy", "padded", "max-length-past-positions")),
    ("ctrl", "causal-lm", ("healthy", "added-no-resize")),
    ("mpnet", "masked-lm", ("healthy", "max-length-past-positions")),  # padding_idx 1 whatever pad_token_id
    # position bounds the checkpoint does not store: buffers and tables sized by a config key (class_shapes)
    ("gptj", "causal-lm", ("healthy", "max-length-past-positions")),
    ("ctrl", "seq-cls", ("healthy", "max-length-past-positions")),
    ("marian", "seq2seq-lm", ("healthy", "max-length-past-positions")),
    ("tipsv2_text_model", "text-encoder", ("healthy", "max-length-past-positions")),
]


@pytest.mark.parametrize(("model_type", "head", "cases"), DERIVED)
def test_derived_facts_agree_with_execution(tmp_path: Path, model_type: str, head: str, cases) -> None:
    import warnings

    result = sweep.Sweep()
    (cls,) = [c for mt, h, c in sweep.targets({model_type}) if h == head]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sweep.sweep_one(tmp_path, model_type, head, cls, result, cases)
    assert result.excluded == {}
    verdicts = {c.case: (c.execution.split(":")[0], c.tool.split(":")[0]) for c in result.cases}
    assert verdicts["healthy"] == ("clean", "clean")
    assert [(c.case, c.execution, c.tool) for c in result.cases if not c.agree] == []
    assert any(ex == "fails" for ex, _ in verdicts.values())


@pytest.mark.parametrize("biased", [True, False])
def test_deberta_v2_relative_attention_with_absolute_positions(tmp_path: Path, biased: bool) -> None:
    """DeBERTa-v2/v3 with relative attention: `position_biased_input` adds an absolute table (bounded by its
    rows), without it there is none (any length runs). model_max_length twice the positions, both ways."""
    import transformers

    cfg = sweep.tiny_config("deberta-v2", sweep.VOCAB, relative_attention=True, position_biased_input=biased,
                            pos_att_type=["p2c", "c2p"])
    transformers.DebertaV2ForMaskedLM(cfg).save_pretrained(tmp_path)
    sweep.build_tokenizer(tmp_path, model_max_length=2 * sweep.POSITIONS)
    execution = sweep.execute(tmp_path, "DebertaV2ForMaskedLM")
    tool, _ = sweep.tool_verdict(tmp_path)
    assert execution.startswith("fails") is biased
    assert tool == ("finding: HVA301" if biased else "clean")


@pytest.mark.parametrize(("model_type", "head"), [("cpmant", "causal-lm"), ("molmo2_text", "text-encoder")])
def test_classes_with_extra_input_rows_are_not_false_alarms(tmp_path: Path, model_type: str, head: str) -> None:
    """Input rows beyond vocab_size by design (CPM-Ant's prompt rows; Molmo2's additional vocabulary, stored in
    two pieces the conversion mapping concatenates): every case runs, and the audit agrees on each (its
    healthy pairs were HVA103 false alarms)."""
    import warnings

    result = sweep.Sweep()
    (cls,) = [c for mt, h, c in sweep.targets({model_type}) if h == head]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sweep.sweep_one(tmp_path, model_type, head, cls, result, ("healthy", "padded", "added-no-resize"))
    assert result.excluded == {}
    assert [(c.case, c.execution, c.tool) for c in result.cases if not c.agree] == []
    assert {c.case: c.tool for c in result.cases}["healthy"] == "clean"


def test_merge_reads_the_written_table_back(tmp_path: Path, swept) -> None:
    """--merge reads the table in docs/families.md back (no kept sweep at hand): every row and exclusion as
    written, so a partial rerun replaces only its own architectures' rows."""
    doc = tmp_path / "families.md"
    doc.write_text("# Families\n")
    swept.excluded["fake_arch seq-cls"] = "healthy pair does not run: ValueError: a | b"
    sweep.write(sweep.render(swept), doc)
    back = sweep.from_doc(doc)
    assert back["excluded"] == {k: v.replace("|", "/") for k, v in swept.excluded.items()}
    assert [(c["model_type"], c["head"], c["case"], c["execution"], c["tool"]) for c in back["cases"]] == sorted(
        [(c.model_type, c.head, c.case, c.execution, c.tool) for c in swept.cases],
        key=lambda t: (t[0], t[1], sweep.CASES.index(t[2])))
    rerun = sweep.Sweep(cases=[c for c in swept.cases if c.model_type == "llama"])
    merged = sweep.merge(back, rerun)
    assert len(merged.cases) == len(swept.cases) and sum(c.seconds == c.seconds for c in merged.cases) == 5
    del swept.excluded["fake_arch seq-cls"]


# The families beyond one text config (tests/family_rows.py, `--families`): each case built and run as its own
# test runs it; the table in docs/families.md is what the script wrote, and every row agrees.
FAMILIES = ("CTC", "DeBERTa-v2", "Mllama", "PaliGemma", "multi-label", "sentence-transformers", "CLIP", "LoRA",
            "GGUF")


def _doc_family_rows() -> list[list[str]]:
    import re

    text = (ROOT / "docs" / "families.md").read_text(encoding="utf-8")
    block = text.split(sweep.FAMILY_BEGIN, 1)[1].split(sweep.FAMILY_END, 1)[0]
    rows = [line for line in block.splitlines() if line.startswith("| ") and not line.startswith(("| family", "| ---"))]
    return [[c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", row)[1:-1]] for row in rows]


def test_every_family_has_rows_and_the_doc_is_the_scripts_output() -> None:
    sys.path.insert(0, str(ROOT / "tests"))
    import family_rows

    cases = [(c.family, c.case) for c in family_rows.CASES]
    assert {f.split()[0].rstrip(",") for f, _ in cases} == set(FAMILIES)
    doc = _doc_family_rows()
    assert [(r[0], r[1]) for r in doc] == cases  # the doc lists exactly the cases, in order
    assert all(r[4] == "yes" for r in doc), [r for r in doc if r[4] != "yes"]
    for family in FAMILIES:  # each family shows both verdicts: a healthy case, and one that fails or is wrong
        verdicts = {r[2].split(" ")[0].rstrip(":") for r in doc if r[0].startswith(family)}
        assert "clean" in verdicts and verdicts - {"clean"}, (family, verdicts)


def test_family_rows_agree_when_run_again() -> None:
    """The cheap families run again here (CLIP text towers, GGUF vocabularies): the same rows as the doc's."""
    rows = sweep.run_families({"clip", "gguf"})
    assert rows and all(r.agree for r in rows), [(r.case, r.execution, r.tool) for r in rows if not r.agree]
    doc = {(r[0], r[1]): (r[2], r[3]) for r in _doc_family_rows()}
    assert {(r.family, r.case): (r.execution, r.tool) for r in rows}.items() <= doc.items()
