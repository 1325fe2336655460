"""sentence-transformers folders (``modules.json``) are audited as sentence-transformers loads them: the
checkpoint of the Transformer module (``0_Transformer/`` or the folder itself), and ``max_seq_length`` from its
``sentence_bert_config.json`` against the positions the model can use. Verdicts by running
``SentenceTransformer(...).encode`` on CPU."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from builders import make_model, make_tokenizer

from hf_vocab_audit import AuditError, audit

POSITIONS = 64


def st_folder(root: Path, max_seq_length: int | None, sub: str = "0_Transformer", model_max_length: int = POSITIONS) -> Path:
    """A tiny BERT sentence-transformers folder: the Transformer module at ``sub``, mean pooling."""
    module = root / sub if sub else root
    make_model(module, "bert-base", 100, max_position_embeddings=POSITIONS)
    make_tokenizer(module, 100, style="bert", model_max_length=model_max_length)
    if max_seq_length is not None:
        (module / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": max_seq_length}))
    (root / "1_Pooling").mkdir(parents=True)
    (root / "1_Pooling" / "config.json").write_text(json.dumps({"word_embedding_dimension": 16,
                                                                "pooling_mode_mean_tokens": True}))
    (root / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": sub, "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    ]))
    return root


def encode_error(folder: Path) -> str | None:
    """Encode a text longer than every limit with sentence-transformers: the exception's type, or None."""
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(folder), device="cpu", local_files_only=True)
    try:
        model.encode([" ".join(["w5"] * 300)])
    except (IndexError, RuntimeError, ValueError) as exc:
        return type(exc).__name__
    return None


@pytest.mark.parametrize("sub", ["0_Transformer", ""])
def test_a_max_seq_length_within_the_positions_is_clean(tmp_path: Path, sub: str) -> None:
    folder = st_folder(tmp_path / "st", POSITIONS, sub)
    assert encode_error(folder) is None
    report = audit(folder)
    assert report.exit_code() == 0, [f.message for f in report.findings]
    assert report.coverage.tensors  # the module's checkpoint was examined, not refused


def test_a_max_seq_length_past_the_positions_is_hva301(tmp_path: Path) -> None:
    """The tokenizer's model_max_length fits (transformers runs); sentence-transformers truncates to 128."""
    folder = st_folder(tmp_path / "st", 2 * POSITIONS)
    assert encode_error(folder) is not None
    report = audit(folder)
    assert report.exit_code() == 1
    (hit,) = [f for f in report.findings if f.code == "HVA301"]
    assert "max_seq_length 128" in hit.message and hit.location.file == "0_Transformer/sentence_bert_config.json"


def test_tokens_added_without_a_resize_in_the_module_are_found(tmp_path: Path) -> None:
    folder = st_folder(tmp_path / "st", POSITIONS)
    make_tokenizer(folder / "0_Transformer", 100, style="bert", model_max_length=POSITIONS, added=["<x>", "<y>"])
    report = audit(folder)
    assert "HVA101" in {f.code for f in report.findings}


def test_a_module_path_leaving_the_folder_is_refused(tmp_path: Path) -> None:
    folder = st_folder(tmp_path / "st", POSITIONS)
    (folder / "modules.json").write_text(json.dumps([{"path": "../x", "type": "sentence_transformers.models.Transformer"}]))
    with pytest.raises(AuditError, match="leaves the folder"):
        audit(folder)


def top_level_error(folder: Path) -> str | None:
    """Run the top-level checkpoint as ``AutoModel.from_pretrained(folder)`` loads it, on every id the package's
    tokenizer (the Transformer module's) can emit: the exception's type, or None."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    model = AutoModel.from_pretrained(folder).eval()
    tok = AutoTokenizer.from_pretrained(folder / "0_Transformer")
    try:
        with torch.no_grad():
            model(input_ids=torch.arange(len(tok)).reshape(-1, 1))  # one id per row: no position is past the table
    except (IndexError, RuntimeError) as exc:
        return type(exc).__name__
    return None


def test_a_broken_top_level_checkpoint_beside_a_clean_module_fails(tmp_path: Path) -> None:
    """modules.json points at a clean 0_Transformer, while the top level (what AutoModel.from_pretrained(folder)
    loads) has 90 embedding rows for the package's 100 ids: the target's modules.json must not choose the
    checkpoint the audit reads. The finding names the top level's file."""
    folder = st_folder(tmp_path / "st", POSITIONS)
    make_model(folder, "bert-base", 90, max_position_embeddings=POSITIONS)
    assert encode_error(folder) is None  # sentence-transformers itself reads the clean module
    assert top_level_error(folder) is not None
    report = audit(folder)
    assert report.exit_code() == 1
    hits = [f for f in report.findings if f.code == "HVA101"]
    assert [f.location.file for f in hits] == ["model.safetensors"], [str(f.location) for f in report.findings]


def test_a_broken_module_beside_a_clean_top_level_names_the_module_file(tmp_path: Path) -> None:
    folder = st_folder(tmp_path / "st", POSITIONS)
    make_model(folder, "bert-base", 100, max_position_embeddings=POSITIONS)
    make_model(folder / "0_Transformer", "bert-base", 90, max_position_embeddings=POSITIONS)
    assert top_level_error(folder) is None
    report = audit(folder)
    assert report.exit_code() == 1
    assert {f.location.file for f in report.findings if f.code == "HVA101"} == {"0_Transformer/model.safetensors"}


def test_a_clean_top_level_checkpoint_beside_a_clean_module_passes(tmp_path: Path) -> None:
    folder = st_folder(tmp_path / "st", POSITIONS)
    make_model(folder, "bert-base", 100, max_position_embeddings=POSITIONS)
    assert encode_error(folder) is None and top_level_error(folder) is None
    report = audit(folder)
    assert report.exit_code() == 0, [str(f.location) + f.message for f in report.findings]
    assert report.coverage.not_examined == ()


def test_a_top_level_checkpoint_with_no_recognised_matrix_is_a_gap(tmp_path: Path) -> None:
    """The top level's weights hold nothing the audit recognises as the vocabulary matrix: not examined, so
    the default verdict fails closed (exit 2) instead of passing on the module alone."""
    import torch
    from safetensors.torch import save_file

    folder = st_folder(tmp_path / "st", POSITIONS)
    make_model(folder, "bert-base", 100, max_position_embeddings=POSITIONS)
    save_file({"pooler.dense.weight": torch.zeros(4, 4)}, str(folder / "model.safetensors"))
    report = audit(folder)
    gaps = [g.what for g in report.coverage.not_examined]
    assert any(g.startswith("the top-level checkpoint") for g in gaps), gaps
    assert report.exit_code() == 2


def _sweep():
    import importlib.util
    import sys

    if "family_sweep" not in sys.modules:
        root = Path(__file__).resolve().parents[2]
        spec = importlib.util.spec_from_file_location("family_sweep", root / "scripts" / "family_sweep.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["family_sweep"] = module
        spec.loader.exec_module(module)
    return sys.modules["family_sweep"]


def st_without_max_seq_length(root: Path, model_type: str, model_max_length: int | None) -> Path:
    """A sentence-transformers folder (the model at the top level) with no sentence_bert_config.json: a tiny
    ``model_type`` base model of 64 position rows and the family sweep's word-level tokenizer."""
    import transformers

    sweep = _sweep()
    cfg = sweep.tiny_config(model_type, sweep.VOCAB)
    transformers.AutoModel.from_config(cfg).save_pretrained(root)
    sweep.build_tokenizer(root, model_max_length=model_max_length)
    (root / "1_Pooling").mkdir()
    (root / "1_Pooling" / "config.json").write_text(json.dumps({"word_embedding_dimension": 32,
                                                                "pooling_mode_mean_tokens": True}))
    (root / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    ]))
    return root


def effective_run(folder: Path) -> tuple[int, str | None]:
    """sentence-transformers' own effective max_seq_length, and the exception (its type) of encoding a text
    longer than every limit, or None."""
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(folder), device="cpu", local_files_only=True)
    try:
        model.encode([" ".join(["w5"] * 300)])
    except (IndexError, RuntimeError, ValueError) as exc:
        return model.max_seq_length, type(exc).__name__
    return model.max_seq_length, None


# (model type, tokenizer model_max_length, the length sentence-transformers uses, whether HVA301 fires at
# sentence_bert_config.json): decided by encoding with sentence-transformers itself.
NO_MAX_SEQ_LENGTH = [
    ("roberta", None, 64, True),  # min(unset, 64) = 64 > the 60 positions past padding_idx 3: IndexError
    ("roberta", 60, 60, False),  # the tokenizer's own cap fits: healthy
    ("bert", None, 64, False),  # min(unset, 64) = 64 = BERT's 64 positions: healthy (HVA303 still warns)
    ("bert", 48, 48, False),
]


@pytest.mark.parametrize(("model_type", "model_max_length", "effective", "fires"), NO_MAX_SEQ_LENGTH)
def test_without_max_seq_length_the_effective_length_is_the_capped_model_max_length(
        tmp_path: Path, model_type: str, model_max_length: int | None, effective: int, fires: bool) -> None:
    folder = st_without_max_seq_length(tmp_path / "st", model_type, model_max_length)
    length, error = effective_run(folder)
    assert length == effective and (error is not None) is fires
    report = audit(folder)
    st_hits = [f for f in report.findings if f.code == "HVA301" and f.location.file == "sentence_bert_config.json"]
    assert bool(st_hits) is fires, [(f.code, f.message) for f in report.findings]
    assert (report.exit_code() == 1) is fires
    if fires:
        (hit,) = st_hits
        assert "no max_seq_length" in hit.message and f"= {effective} (no max_seq_length in sentence_bert_config" \
            ".json) > the 60 positions" in hit.message
        assert hit.details["effective_length"] == effective and hit.fix is not None


def test_the_fix_sets_a_model_max_length_sentence_transformers_then_keeps(tmp_path: Path) -> None:
    """Setting model_max_length to the usable positions (the finding's fix) makes sentence-transformers
    truncate there, and the folder encodes and audits clean of HVA301."""
    folder = st_without_max_seq_length(tmp_path / "st", "roberta", None)
    (hit,) = [f for f in audit(folder).findings if f.code == "HVA301"]
    (edit,) = hit.fix.edits
    config = folder / edit.file
    config.write_text(json.dumps({**json.loads(config.read_text()), edit.key: edit.value}))
    assert effective_run(folder) == (60, None)
    assert "HVA301" not in {f.code for f in audit(folder).findings}


def test_a_tokenizer_past_the_positions_is_one_finding_at_the_tokenizer(tmp_path: Path) -> None:
    """model_max_length 128 and no max_seq_length: sentence-transformers caps it at 64 (runs for BERT); the
    tokenizer's own finding (transformers truncates to 128) is the one reported, not a second one."""
    folder = st_without_max_seq_length(tmp_path / "st", "bert", 128)
    assert effective_run(folder) == (64, None)
    hits = [f for f in audit(folder).findings if f.code == "HVA301"]
    assert [h.location.file for h in hits] == ["tokenizer_config.json"]
