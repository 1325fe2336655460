"""The vocabulary matrix audited is the one transformers loads: chosen by the parameter names the config's
classes give it (class_shapes' ``embedding_names``, derived from the classes), never by a name that merely ends
the same way. Verdicts by loading with ``AutoModelForCausalLM.from_pretrained`` and running an id on CPU."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from builders import make_model, make_tokenizer
from safetensors.torch import load_file, save_file

from hf_vocab_audit import audit

REAL = "model.embed_tokens.weight"
DECOY = "a.embed_tokens.weight"


def decoyed(folder: Path, real_rows: int, vocab_size: int, decoy_rows: int = 100) -> Path:
    """A tied tiny Llama whose real input embedding has ``real_rows`` rows, a tokenizer of 100 ids, and a decoy
    ``a.embed_tokens.weight`` of ``decoy_rows`` rows added to its model.safetensors."""
    make_model(folder, "llama", real_rows, tie_word_embeddings=True)
    make_tokenizer(folder, 100)
    state = load_file(folder / "model.safetensors")
    state[DECOY] = torch.zeros(decoy_rows, state[REAL].shape[1])
    save_file(state, str(folder / "model.safetensors"), metadata={"format": "pt"})
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(config | {"vocab_size": vocab_size}))
    return folder


def runs_every_id(folder: Path) -> str | None:
    """Load as transformers does and run the tokenizer's last id: None when it runs, else why not."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        model = AutoModelForCausalLM.from_pretrained(folder).eval()
        with torch.no_grad():
            model(input_ids=torch.tensor([[len(AutoTokenizer.from_pretrained(folder)) - 1]]))
    except (IndexError, RuntimeError) as exc:
        return type(exc).__name__
    return None


def _mystery(folder: Path) -> None:
    """The same files under an architecture no table knows: the suffixes decide, with two candidates."""
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(config | {"model_type": "mystery",
                                                             "architectures": ["MysteryForCausalLM"]}))


def test_a_decoy_does_not_hide_a_real_matrix_too_small_for_the_ids(tmp_path: Path) -> None:
    """transformers loads model.embed_tokens.weight (90 rows), drops the decoy as an unexpected key, and the
    tokenizer's ids 90..99 index past it."""
    folder = decoyed(tmp_path / "m", 90, 90)
    assert runs_every_id(folder) == "IndexError"
    report = audit(folder)
    assert report.exit_code() == 1
    (hit,) = [f for f in report.findings if f.code == "HVA101"]
    assert hit.location.tensor == REAL
    assert report.facts["input_embedding"]["name"] == REAL


def test_a_decoy_sized_as_the_config_does_not_pass_a_matrix_from_pretrained_refuses(tmp_path: Path) -> None:
    """vocab_size 100 matches the decoy; the real 90-row matrix does not, and from_pretrained refuses it."""
    folder = decoyed(tmp_path / "m", 90, 100)
    assert runs_every_id(folder) == "RuntimeError"
    report = audit(folder)
    assert report.exit_code() == 1
    assert {f.code for f in report.failing()} >= {"HVA101", "HVA103"}


def test_a_healthy_checkpoint_with_an_extra_tensor_of_a_like_name_is_quiet(tmp_path: Path) -> None:
    folder = decoyed(tmp_path / "m", 100, 100, decoy_rows=50)
    assert runs_every_id(folder) is None
    report = audit(folder)
    assert report.exit_code() == 0, [f.message for f in report.findings]
    assert report.facts["input_embedding"]["name"] == REAL


@pytest.mark.parametrize(("real_rows", "decoy_rows", "exit_code"), [(90, 100, 1), (100, 100, 0)])
def test_an_unknown_architecture_audits_the_smallest_candidate(tmp_path: Path, real_rows: int, decoy_rows: int,
                                                               exit_code: int) -> None:
    """No class names the matrix: of the tensors whose names end like one, the one with the fewest rows is the
    bound an id must fit, whichever transformers' class would load (never the first name in sort order)."""
    folder = decoyed(tmp_path / "m", real_rows, real_rows, decoy_rows)
    _mystery(folder)
    report = audit(folder)
    assert report.exit_code() == exit_code, [f.message for f in report.findings]
    if exit_code:
        assert report.facts["input_embedding"]["name"] == REAL
