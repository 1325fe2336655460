"""Facts derived from transformers' own classes (facts/class_shapes.py): the stored table matches a fresh
derivation on a sample, and each fact makes the audit agree with what transformers does with the checkpoint
(load and forward on CPU decide the expected verdict)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from hf_vocab_audit import audit
from hf_vocab_audit.facts import class_shapes
from hf_vocab_audit.facts.config import load_config

# Types with each fact, and types with none of them (rotary Llama, BERT's stored table is its own bound).
SAMPLE = {"cpmant", "molmo2_text", "gptj", "ctrl", "marian", "tapas", "deberta-v2", "llama", "bert"}


def test_stored_table_matches_a_fresh_derivation_on_a_sample() -> None:
    fresh = class_shapes.generate(SAMPLE)
    stored = class_shapes.tables()
    for part in ("input_rows", "position_tables", "embedding_names"):
        assert {k: v for k, v in stored[part].items() if k in SAMPLE} == fresh[part], (
            "stale table: run `python scripts/regenerate.py`")
    assert stored["input_pieces"] == fresh["input_pieces"]
    assert "llama" not in fresh["position_tables"] and "llama" not in fresh["input_rows"]
    assert fresh["embedding_names"]["llama"] == {"input": ["embed_tokens.weight", "model.embed_tokens.weight"],
                                                 "output": {"LlamaForCausalLM": "lm_head.weight"}}
    assert fresh["embedding_names"]["bert"]["output"]["BertForMaskedLM"] == "cls.predictions.decoder.weight"


def test_derived_facts_read_as_transformers_builds_them() -> None:
    t = class_shapes.tables()
    assert t["input_rows"]["cpmant"] == {"extra": 1024, "keys": {"prompt_length": 32, "prompt_types": 32}}
    assert t["position_tables"]["gptj"]["key"] == "n_positions"
    assert t["position_tables"]["deberta-v2"]["when"] == {"position_biased_input": True}
    assert t["position_tables"]["tapas"]["runs_past"] == {"when": {"reset_position_index_per_cell": True}}
    assert (["wte.embedding", "wte.new_embedding"], "embed_tokens.weight") in [
        (list(s), tg) for s, tg in class_shapes.input_pieces()]


def _cpmant(folder: Path, **config: int) -> None:
    import torch
    import transformers

    from tests.test_family_sweep import sweep

    torch.manual_seed(0)
    cfg = sweep.tiny_config("cpmant", sweep.VOCAB, dim_ff=64, **config)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        transformers.CpmAntForCausalLM(cfg).save_pretrained(folder)
    sweep.build_tokenizer(folder, model_max_length=sweep.POSITIONS)


def _loads(folder: Path) -> bool:
    import transformers

    try:
        transformers.CpmAntForCausalLM.from_pretrained(folder)
    except Exception:  # noqa: BLE001 - the refusal is the verdict
        return False
    return True


def test_cpmant_prompt_rows_are_not_a_vocab_size_mismatch(tmp_path: Path) -> None:
    """CPM-Ant builds vocab_size + prompt_types * prompt_length input rows: a healthy checkpoint loads and is
    quiet; vocab_size edited by hand makes from_pretrained refuse it, and HVA103 fires with the fix that
    undoes it (the rows less the prompt rows)."""
    _cpmant(tmp_path)
    assert _loads(tmp_path)
    assert audit(tmp_path).exit_code() == 0
    cfg = json.loads((tmp_path / "config.json").read_text())
    cfg["vocab_size"] = 70
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    assert not _loads(tmp_path)
    (finding,) = [f for f in audit(tmp_path).failing() if f.code == "HVA103"]
    assert finding.fix is not None and finding.fix.edits[0].value == 64


def test_cpmant_with_other_prompt_sizes_is_built_on_the_meta_device(tmp_path: Path, monkeypatch) -> None:
    """prompt_length away from the default: the table cannot say, the class is built on the meta device (it
    loads and is quiet); without PyTorch the audit cannot decide: a vocabulary-matrix gap naming the keys."""
    _cpmant(tmp_path, prompt_length=4, prompt_types=3)
    assert _loads(tmp_path)
    assert class_shapes.extra_input_rows(load_config(tmp_path / "config.json")) == 12
    assert audit(tmp_path).exit_code() == 0

    def no_torch(path: object, needed_for: str) -> None:
        raise class_shapes.MissingExtra(path, f"{needed_for} needs PyTorch")

    monkeypatch.setattr(class_shapes, "import_torch", no_torch)
    monkeypatch.setattr(class_shapes, "_BUILT", {})
    report = audit(tmp_path)
    assert report.exit_code() == 2
    (gap,) = [g for g in report.coverage.not_examined if "prompt_length" in g.reason]
    assert "PyTorch" in gap.reason


@pytest.mark.parametrize("reset", [True, False])
def test_tapas_positions_reset_per_cell_run_past_the_table(tmp_path: Path, reset: bool) -> None:
    """TAPAS clamps positions per table cell while reset_position_index_per_cell is on: a model_max_length
    twice the table runs (quiet); with it off the table is the bound (HVA301). Decided by execution."""
    import transformers

    from tests.test_family_sweep import sweep

    cfg = sweep.tiny_config("tapas", sweep.VOCAB, reset_position_index_per_cell=reset)
    transformers.TapasForMaskedLM(cfg).save_pretrained(tmp_path)
    sweep.build_tokenizer(tmp_path, model_max_length=2 * sweep.POSITIONS)
    execution = sweep.execute(tmp_path, "TapasForMaskedLM")
    tool, _ = sweep.tool_verdict(tmp_path)
    assert execution.startswith("clean") is reset
    assert tool == ("clean" if reset else "finding: HVA301")
