"""HVA806: an adapter that carries embedding rows for new tokens but no lm_head rows, on an untied base.
peft decides the verdict: the adapter is loaded twice onto the resized base, and the lm_head rows of the new
ids are compared with each other and with the rows the adapter was trained with."""

from __future__ import annotations

import pytest
import torch
from builders import checkpoint

from hf_vocab_audit import audit

NEW = ["<tool>", "</tool>"]


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return checkpoint(tmp_path_factory.mktemp("base"), "llama", 104)  # untied: lm_head.weight of its own


@pytest.fixture(scope="module")
def tied_base(tmp_path_factory):
    return checkpoint(tmp_path_factory.mktemp("tied"), "llama", 104, model={"tie_word_embeddings": True})


def save_adapter(base, folder, *, save_embedding_layers, **lora):
    """Add two tokens, resize to 106 rows, save the adapter (peft's ``save_embedding_layers`` as given);
    the lm_head rows of the new ids the model was trained with."""
    import transformers as T
    from peft import LoraConfig, get_peft_model

    torch.manual_seed(0)
    tok = T.AutoTokenizer.from_pretrained(base)
    tok.add_special_tokens({"additional_special_tokens": NEW})
    model = T.AutoModelForCausalLM.from_pretrained(base)
    model.resize_token_embeddings(106)
    trained = model.get_output_embeddings().weight[104:106].detach().clone()
    get_peft_model(model, LoraConfig(r=2, target_modules=["q_proj", "v_proj"], **lora)).save_pretrained(
        folder, save_embedding_layers=save_embedding_layers)
    tok.save_pretrained(folder)
    return folder, trained


def loaded_lm_head_rows(base, folder, seed):
    """The lm_head rows of the new ids once the adapter is loaded onto the base resized to 106 rows."""
    import transformers as T
    from peft import PeftModel

    torch.manual_seed(seed)
    model = T.AutoModelForCausalLM.from_pretrained(base)
    model.resize_token_embeddings(106)
    return PeftModel.from_pretrained(model, folder).get_output_embeddings().weight[104:106].detach().clone()


def codes(folder):
    return {f.code: f for f in audit(folder).findings}


@pytest.mark.parametrize("lora", [{"modules_to_save": ["embed_tokens"]}, {"trainable_token_indices": [104, 105]}],
                         ids=["modules_to_save", "trainable_token_indices"])
def test_embedding_saved_without_lm_head_on_untied_base_is_an_error(base, tmp_path, lora):
    folder, trained = save_adapter(base, tmp_path / "a", save_embedding_layers=False, **lora)
    first, second = loaded_lm_head_rows(base, folder, 1), loaded_lm_head_rows(base, folder, 2)
    assert not torch.equal(first, second)  # made up at every load
    assert not torch.equal(first, trained) and not torch.equal(second, trained)
    found = codes(folder)
    assert "HVA806" in found and found["HVA806"].severity.value == "error"
    assert "'<tool>' (104), '</tool>' (105)" in found["HVA806"].message
    assert audit(folder).exit_code() == 1


def test_lm_head_saved_with_the_embedding_is_quiet(base, tmp_path):
    folder, trained = save_adapter(base, tmp_path / "a", save_embedding_layers="auto",
                                   modules_to_save=["embed_tokens"])  # peft saves both matrices after a resize
    first, second = loaded_lm_head_rows(base, folder, 1), loaded_lm_head_rows(base, folder, 2)
    assert torch.equal(first, second) and torch.equal(first, trained)
    assert "HVA806" not in codes(folder) and "HVA806" in audit(folder).rules_run


def test_tied_base_is_quiet(tied_base, tmp_path):
    folder, _ = save_adapter(tied_base, tmp_path / "a", save_embedding_layers=False, trainable_token_indices=[104, 105])
    first, second = loaded_lm_head_rows(tied_base, folder, 1), loaded_lm_head_rows(tied_base, folder, 2)
    assert torch.equal(first, second)  # peft applies the saved rows to the tied lm_head too
    assert "HVA806" not in codes(folder)
