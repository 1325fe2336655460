"""HVA70x: multimodal placeholders and the nested text config; the forward on CPU decides each verdict."""

from __future__ import annotations

import json

from builders import edit_json, make_tokenizer
from family_builders import gemma3, llava, multimodal_forward_error

from hf_vocab_audit import audit


def found(folder):
    return {f.code: f for f in audit(folder).findings if f.code.startswith("HVA7") or f.code == "HVA101"}


def llava_pair(folder, rows=104, image_id=103, base=103):
    llava(folder, rows, image_token_index=image_id)
    make_tokenizer(folder, base, added_special=["<image>"])  # '<image>' is id `base`
    return folder


def test_llava_healthy_is_quiet(tmp_path):
    folder = llava_pair(tmp_path / "m")
    assert multimodal_forward_error(folder, "LlavaForConditionalGeneration", [1, 103, 103, 103, 103, 5, 2]) is None
    assert [f.code for f in audit(folder).findings] == []


def test_llava_image_index_at_the_pad_token(tmp_path):
    folder = llava_pair(tmp_path / "m", image_id=3)
    error = multimodal_forward_error(folder, "LlavaForConditionalGeneration", [1, 103, 103, 103, 103, 5, 2])
    assert error is not None and "Image features and image tokens do not match" in error
    codes = found(folder)
    assert set(codes) == {"HVA701"}
    assert codes["HVA701"].message == (
        "config.json image_token_index = 3 is '<pad>' (the tokenizer's pad token), but the image placeholder "
        "'<image>' is id 103: the forward raises 'Image features and image tokens do not match'")


def test_llava_image_index_past_the_rows(tmp_path):
    folder = llava_pair(tmp_path / "m", image_id=104, base=104)  # '<image>' = 104, but only 104 rows
    error = multimodal_forward_error(folder, "LlavaForConditionalGeneration", [1, 104, 104, 104, 104, 5, 2])
    assert error is not None and error.startswith("IndexError")
    codes = found(folder)
    assert set(codes) == {"HVA101", "HVA702"} and codes["HVA702"].severity.value == "error"
    assert "image_token_index = 104 is outside the 104 text embedding rows" in codes["HVA702"].message


def test_processor_names_a_token_the_tokenizer_lacks(tmp_path):
    from transformers import AutoTokenizer

    folder = llava_pair(tmp_path / "m")
    (folder / "processor_config.json").write_text(json.dumps({"image_token": "<img>", "patch_size": 4}))
    ids = AutoTokenizer.from_pretrained(folder)("<img>" * 4, add_special_tokens=False)["input_ids"]
    error = multimodal_forward_error(folder, "LlavaForConditionalGeneration", [1, *ids, 5, 2])
    assert error is not None and "do not match" in error
    (f,) = found(folder).values()
    assert f.code == "HVA701" and "processor_config.json image_token names the image placeholder '<img>'" in f.message


def gemma_pair(folder, image_id=104):
    gemma3(folder, 104, image_token_index=image_id, boi_token_index=102, eoi_token_index=103)
    make_tokenizer(folder, 102, added_special=["<start_of_image>", "<end_of_image>", "<image_soft_token>"])
    return folder  # '<image_soft_token>' is id 104: one past the 104 rows


def test_gemma3_oov_image_token_is_a_warning_naming_both_classes(tmp_path):
    folder = gemma_pair(tmp_path / "m")
    ids = [2, 102, 104, 104, 104, 104, 103, 5, 1]
    assert multimodal_forward_error(folder, "Gemma3ForConditionalGeneration", ids) is None
    assert multimodal_forward_error(folder, "Gemma3ForCausalLM", ids).startswith("IndexError")
    codes = found(folder)
    assert set(codes) == {"HVA703"}  # neither HVA101 nor HVA702: the multimodal class replaces the id
    f = codes["HVA703"]
    assert f.severity.value == "warning"
    assert "Gemma3ForConditionalGeneration replaces it" in f.message and "Gemma3ForCausalLM" in f.message


def test_gemma3_in_range_image_token_is_quiet(tmp_path):
    folder = tmp_path / "m"
    gemma3(folder, 105, image_token_index=104, boi_token_index=102, eoi_token_index=103)
    make_tokenizer(folder, 102, added_special=["<start_of_image>", "<end_of_image>", "<image_soft_token>"])
    ids = [2, 102, 104, 104, 104, 104, 103, 5, 1]
    assert multimodal_forward_error(folder, "Gemma3ForConditionalGeneration", ids) is None
    assert multimodal_forward_error(folder, "Gemma3ForCausalLM", ids) is None
    assert found(folder) == {}
    assert [f.code for f in audit(folder).findings] == []  # the whole audit is clean


def test_top_level_vocab_size_differs_from_text_config(tmp_path):
    import transformers

    folder = llava_pair(tmp_path / "m")
    edit_json(folder / "config.json", vocab_size=200)
    model = transformers.LlavaForConditionalGeneration.from_pretrained(folder)
    assert model.get_input_embeddings().num_embeddings == 104  # built from text_config
    (f,) = found(folder).values()
    assert f.code == "HVA704" and f.message == (
        "config.json vocab_size = 200 but text_config.vocab_size = 104: the model is built from "
        "text_config.vocab_size (104 embedding rows)")
