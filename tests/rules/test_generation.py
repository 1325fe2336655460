"""HVA21x: generation ids. Each case runs transformers' generate() on CPU to decide what the audit says:
an exception -> HVA210 (error), a value silently dropped or wrapped -> HVA211 (warning), runs -> quiet."""

from __future__ import annotations

import json

import pytest
from builders import checkpoint, edit_json
from family_builders import WHISPER_VOCAB, generate_error, whisper, write_generation

from hf_vocab_audit import audit

GEN = ("HVA210", "HVA211", "HVA212", "HVA213")


def found(folder):
    return {f.code: f for f in audit(folder, select=list(GEN)).findings}


@pytest.fixture(scope="module")
def bart(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bart")
    checkpoint(folder, "bart", 104)
    return folder


BART_CASES = [
    # (generation_config.json changes, expected code or None)
    ({"forced_bos_token_id": 150}, "HVA210"),
    ({"forced_eos_token_id": 104}, "HVA210"),
    ({"bad_words_ids": [[7], [104]]}, "HVA210"),
    ({"bad_words_ids": [[-3]]}, "HVA210"),
    ({"suppress_tokens": [200]}, "HVA211"),
    ({"begin_suppress_tokens": [104]}, "HVA211"),
    ({"forced_bos_token_id": -1}, "HVA211"),
    ({"sequence_bias": [[[150], -1.0]]}, "HVA210"),
    ({"forced_bos_token_id": 103, "suppress_tokens": [5], "bad_words_ids": [[9]], "sequence_bias": [[[5, 6], -1.0]]},
     None),
]


@pytest.mark.parametrize(("changes", "expected"), BART_CASES, ids=[json.dumps(c[0]) for c in BART_CASES])
def test_bart_generation_ids_follow_generate(bart, tmp_path, changes, expected):
    import shutil

    folder = tmp_path / "m"
    shutil.copytree(bart, folder)
    edit_json(folder / "generation_config.json", **changes)
    error = generate_error(folder)
    codes = found(folder)
    assert (error is not None) == (expected == "HVA210")
    # BART's config.json keeps forced_eos_token_id = 2: a different value here also shadows it (HVA212)
    shadows = {"HVA212"} if "forced_eos_token_id" in changes else set()
    assert set(codes) == ({expected} if expected else set()) | shadows
    if expected:
        f = codes[expected]
        key, value = next((k, v) for k, v in changes.items())
        assert f.location.file == "generation_config.json" and f.location.key.startswith(key)
        assert "104 vocabulary rows" in f.message, f.message
    if expected == "HVA210":
        assert f.severity.value == "error" and error in f.message


def test_generation_config_wins_over_config_json(bart, tmp_path):
    import shutil

    folder = tmp_path / "m"
    shutil.copytree(bart, folder)
    edit_json(folder / "config.json", forced_bos_token_id=150)
    assert generate_error(folder) is None  # generate() never reads config.json's value ...
    codes = found(folder)
    assert set(codes) == {"HVA212"}  # ... so it is shadowed, not out of range
    assert codes["HVA212"].message == (
        "config.json forced_bos_token_id = 150 is never read by generate(): generation_config.json does not set it"
    )
    (folder / "generation_config.json").unlink()  # without the file, config.json's value is used and crashes
    assert generate_error(folder) == "IndexError"
    (f,) = audit(folder, select=["HVA210"]).findings
    assert f.message.startswith("config.json forced_bos_token_id = 150 is outside the 104 vocabulary rows")


def test_malformed_generation_value_exits_2(bart, tmp_path, run_cli):
    import shutil

    folder = tmp_path / "m"
    shutil.copytree(bart, folder)
    edit_json(folder / "generation_config.json", bad_words_ids=[["x"]])
    code, _out, err = run_cli("check", folder)
    assert code == 2 and "generation_config.json" in err and "bad_words_ids" in err


@pytest.fixture(scope="module")
def whisper_dir(tmp_path_factory):
    return whisper(tmp_path_factory.mktemp("whisper"))


WHISPER_CASES = [
    # (generation changes, generate kwargs, expected code or None)
    ({"lang_to_id": {"<|en|>": 70}}, {"language": "en"}, "HVA210"),
    ({"task_to_id": {"transcribe": 70, "translate": 54}}, {"language": "en", "task": "transcribe"}, "HVA210"),
    ({"no_timestamps_token_id": WHISPER_VOCAB}, {}, "HVA210"),
    ({"forced_decoder_ids": [[1, 70]]}, {}, "HVA210"),
    ({"suppress_tokens": [70]}, {}, "HVA211"),
    ({"begin_suppress_tokens": [70]}, {}, "HVA211"),
    ({"alignment_heads": [[3, 0]]}, {"return_token_timestamps": True}, "HVA213"),
    ({"alignment_heads": [[0, 5]]}, {"return_token_timestamps": True}, "HVA213"),
    ({}, {"language": "en", "task": "translate", "return_token_timestamps": True}, None),
    ({"forced_decoder_ids": [[1, None], [2, 53]]}, {}, None),  # as openai/whisper-* ship it: null = detect
]


@pytest.mark.parametrize(("changes", "kwargs", "expected"), WHISPER_CASES,
                         ids=[json.dumps(c[0]) for c in WHISPER_CASES])
def test_whisper_generation_ids_follow_generate(whisper_dir, tmp_path, changes, kwargs, expected):
    import shutil

    from family_builders import WHISPER_GENERATION

    folder = tmp_path / "w"
    shutil.copytree(whisper_dir, folder)
    write_generation(folder, {**WHISPER_GENERATION, **changes})
    error = generate_error(folder, "WhisperForConditionalGeneration", **kwargs)
    codes = found(folder)
    assert (error is not None) == (expected in ("HVA210", "HVA213"))
    assert set(codes) == ({expected} if expected else set())
    if expected:
        key = next(iter(changes))
        assert codes[expected].location.key.startswith(key)
