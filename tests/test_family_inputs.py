"""Malformed inputs of the new families (generation ids, processor files, adapters): one line naming the file
and the problem, exit code 2, never a traceback."""

from __future__ import annotations

import json

import pytest
from builders import checkpoint, edit_json


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    return checkpoint(tmp_path_factory.mktemp("llama"), "llama", 104)


def copy(src, dst):
    import shutil

    shutil.copytree(src, dst)
    return dst


@pytest.mark.parametrize(("file", "changes", "words"), [
    ("generation_config.json", {"lang_to_id": [52]}, "lang_to_id"),
    ("generation_config.json", {"suppress_tokens": "5"}, "suppress_tokens"),
    ("generation_config.json", {"alignment_heads": [[0]]}, "alignment_heads[0]"),
    ("config.json", {"image_token_index": "<image>"}, "image_token_index"),
    ("processor_config.json", {"image_token_id": 1.5}, "image_token_id"),
])
def test_malformed_family_keys_exit_2(llama, tmp_path, run_cli, file, changes, words):
    folder = copy(llama, tmp_path / "m")
    edit_json(folder / file, **changes)
    code, _out, err = run_cli("check", folder)
    assert code == 2 and file in err and words in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(("content", "words"), [
    ("{not json", "adapter_config.json"),
    (json.dumps({"base_model_name_or_path": 5}), "base_model_name_or_path"),
    (json.dumps({"base_model_name_or_path": "BASE", "trainable_token_indices": "x"}), "trainable_token_indices"),
    (json.dumps({"base_model_name_or_path": "BASE", "modules_to_save": [1]}), "modules_to_save"),
])
def test_malformed_adapter_config_exits_2(llama, tmp_path, run_cli, content, words):
    folder = tmp_path / "adapter"
    folder.mkdir()
    (folder / "adapter_config.json").write_text(content.replace("BASE", str(llama)))
    code, _out, err = run_cli("check", folder)
    assert code == 2 and words in err, err
    assert "Traceback" not in err
