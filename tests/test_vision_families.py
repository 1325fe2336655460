"""Llama-3.2-Vision (Mllama) and PaliGemma, built tiny from transformers' own classes and run on CPU: the
forward decides every expected verdict.

- Mllama's ``embed_tokens`` has vocab_size + 8 rows and its lm_head vocab_size rows: ``<|image|>`` at id
  vocab_size is embedded, never predicted, so no lm_head finding (HVA102); an id past both still fires HVA101.
- ``PaliGemmaProcessor`` adds ``<image>``, 1024 ``<locXXXX>`` and 128 ``<segXXX>`` to the tokenizer at load
  time when its files lack them: ids past the embedding rows crash the forward (HVA101), rows that cover
  them pass.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

from hf_vocab_audit import audit

V = 64  # text vocabulary of both tiny models


def _codes(folder: Path) -> set[str]:
    return {f.code for f in audit(folder).findings}


def _tokenizer(specials: list[str]) -> PreTrainedTokenizerFast:
    vocab = {s: i for i, s in enumerate(specials)} | {f"w{i}": i for i in range(len(specials), V)}
    backend = Tokenizer(models.WordLevel(vocab, unk_token=specials[0]))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=backend, unk_token=specials[0])


# --- Mllama ------------------------------------------------------------------------------------------------


def _mllama(folder: Path, more: int) -> tuple[bool, bool]:
    """A tiny MllamaForConditionalGeneration with ``<|image|>`` at id V and ``more`` added tokens after it;
    returns (a forward over ``<|image|>`` runs, a forward over the last id runs)."""
    from transformers import MllamaConfig, MllamaForConditionalGeneration

    tok = _tokenizer(["<unk>", "<s>", "</s>", "<pad>"])
    tok.add_special_tokens({"bos_token": "<s>", "eos_token": "</s>", "pad_token": "<pad>"})
    tok.add_special_tokens({"additional_special_tokens": ["<|image|>", *(f"<x{i}>" for i in range(more))]})
    assert tok.convert_tokens_to_ids("<|image|>") == V
    config = MllamaConfig(
        text_config={"vocab_size": V, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
                     "num_attention_heads": 4, "num_key_value_heads": 2, "cross_attention_layers": [1],
                     "max_position_embeddings": 128, "bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 3},
        vision_config={"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_global_layers": 1,
                       "attention_heads": 4, "image_size": 28, "patch_size": 14, "max_num_tiles": 2,
                       "vision_output_dim": 64, "intermediate_layers_indices": [0],
                       "supported_aspect_ratios": [[1, 1], [1, 2], [2, 1]]},
        image_token_index=V)
    torch.manual_seed(0)
    model = MllamaForConditionalGeneration(config).eval()
    model.save_pretrained(folder)
    tok.save_pretrained(folder)

    def runs(token_id: int) -> bool:
        ids = torch.tensor([[token_id, 1, 5, 2]])
        try:
            with torch.no_grad():
                model(input_ids=ids, pixel_values=torch.randn(1, 1, 2, 3, 28, 28),
                      aspect_ratio_ids=torch.tensor([[1]]), aspect_ratio_mask=torch.tensor([[[1, 0]]]),
                      cross_attention_mask=torch.ones(1, 4, 1, 2, dtype=torch.long))
        except IndexError:
            return False
        return True

    return runs(V), runs(len(tok) - 1)


@pytest.fixture(scope="module")
def mllama_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, tuple[bool, bool]]]:
    root = tmp_path_factory.mktemp("mllama")
    return {name: (root / name, _mllama(root / name, more)) for name, more in (("healthy", 0), ("past", 10))}


def test_mllama_image_token_is_not_an_lm_head_bug(mllama_dirs):
    folder, (image_runs, _) = mllama_dirs["healthy"]
    assert image_runs  # the image token has an input row: the forward runs
    assert not {"HVA101", "HVA102"} & _codes(folder)
    assert audit(folder).exit_code() == 0


def test_mllama_id_past_the_extra_rows_still_fires(mllama_dirs):
    folder, (image_runs, last_runs) = mllama_dirs["past"]
    assert image_runs and not last_runs  # ids 72..74 are past vocab_size + 8 rows: IndexError
    report = audit(folder)
    hits = {f.code: f for f in report.findings}
    assert {"HVA101", "HVA102"} <= set(hits)
    assert "'<|image|>'" not in hits["HVA102"].message  # embedded by design, never predicted
    assert hits["HVA101"].details["count"] == 3
    (cause,) = report.causes  # names the ids past the matrix it names, not the image token inside it
    assert "(ids 72..74) but language_model.model.embed_tokens.weight still has 72 rows" in cause.story


# --- PaliGemma ---------------------------------------------------------------------------------------------


def _paligemma(folder: Path, rows: int, tokens_in_files: bool) -> bool:
    """A tiny PaliGemmaForConditionalGeneration with ``rows`` text rows and a PaliGemmaProcessor; the
    tokenizer's files hold the processor's tokens only when ``tokens_in_files``. Returns whether a forward
    of ``AutoProcessor.from_pretrained(folder)``'s ids over ``<loc0000>``, ``<loc1023>``, ``<seg127>`` runs."""
    from transformers import AutoProcessor, PaliGemmaConfig, PaliGemmaForConditionalGeneration, PaliGemmaProcessor, SiglipImageProcessor

    tok = _tokenizer(["<unk>", "<pad>", "<eos>", "<bos>"])
    tok.add_special_tokens({"bos_token": "<bos>", "eos_token": "<eos>", "pad_token": "<pad>"})
    tok.save_pretrained(folder / "tok")  # before the processor adds its tokens
    config = PaliGemmaConfig(
        text_config={"model_type": "gemma", "vocab_size": rows, "hidden_size": 32, "intermediate_size": 64,
                     "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 8,
                     "max_position_embeddings": 128, "bos_token_id": 3, "eos_token_id": 2, "pad_token_id": 1},
        vision_config={"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
                       "image_size": 28, "patch_size": 14},
        image_token_index=V, projection_dim=32)
    torch.manual_seed(0)
    PaliGemmaForConditionalGeneration(config).save_pretrained(folder)
    processor = PaliGemmaProcessor(image_processor=SiglipImageProcessor(size={"height": 28, "width": 28},
                                                                        image_seq_length=4), tokenizer=tok)
    processor.save_pretrained(folder)  # the tokenizer with the processor's tokens
    if not tokens_in_files:
        for file in (folder / "tok").iterdir():
            shutil.copy(file, folder / file.name)
    shutil.rmtree(folder / "tok")
    loaded = AutoProcessor.from_pretrained(folder)
    assert (len(loaded.tokenizer), loaded.tokenizer.convert_tokens_to_ids("<seg127>")) == (V + 1153, V + 1152)
    image = (np.random.default_rng(0).random((28, 28, 3)) * 255).astype("uint8")
    batch = loaded(text=["<image>w5 <loc0000><loc1023><seg127>"], images=[image], return_tensors="pt")
    model = PaliGemmaForConditionalGeneration.from_pretrained(folder).eval()
    try:
        with torch.no_grad():
            model(**batch)
    except IndexError:
        return False
    return True


@pytest.mark.parametrize(("rows", "in_files", "healthy"), [
    (V, False, False),  # the processor's tokens, added at load, past the rows
    (V + 1153, False, True),  # rows for every token the processor adds
    (V + 1153, True, True),  # the tokenizer's files already hold them (as published PaliGemma's do)
])
def test_paligemma_processor_tokens_against_the_rows(tmp_path, rows, in_files, healthy):
    runs = _paligemma(tmp_path, rows, in_files)
    assert runs is healthy
    report = audit(tmp_path)
    errors = [f for f in report.findings if f.severity.name == "ERROR"]
    if healthy:
        assert not errors and report.exit_code() == 0
        return
    (hit,) = errors
    assert hit.code == "HVA101" and hit.details["processor_added"] == 1152
    assert "'<loc0000>'" in hit.message and "at load time" in hit.message
