"""``check --target 'transformers<5'``: the HVA97x rules against what transformers 4.57.6 did.

``scripts/transformers4_verdicts.py`` saved every case of ``transformers4_builders.CASES`` with transformers 5,
read it with transformers 4.57.6 (tokenizers 0.22.2) in a child process, ran ``--fix`` and read the fixed copy
with both; tests/data/transformers4_verdicts.json holds what happened. The fast tests rebuild the cases and
replay the verdicts: each rule fires exactly where 4.x refused the files or read another meaning. The live tests
run the 4.x interpreter named by ``HVA_TRANSFORMERS4_PYTHON`` (CI creates it) on the same folders.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

from transformers4_builders import CASE, CASES, build  # noqa: E402

from hf_vocab_audit import audit  # noqa: E402
from hf_vocab_audit.facts.transformers4_tables import (  # noqa: E402
    MODEL_TYPES,
    PARTIAL_ROTARY_FACTOR_DEFAULTS,
    ROPE_LOCAL_BASE_FREQ_DEFAULTS,
    ROPE_SCALING_DEFAULTS,
    ROPE_THETA_DEFAULTS,
    TRANSFORMERS4_VERSION,
)

TESTS = Path(__file__).resolve().parent.parent
VERDICTS = json.loads((TESTS / "data" / "transformers4_verdicts.json").read_text(encoding="utf-8"))
PROBE = TESTS / "transformers4_probe.py"
V4_PYTHON = os.environ.get("HVA_TRANSFORMERS4_PYTHON")
live = pytest.mark.skipif(not V4_PYTHON, reason="HVA_TRANSFORMERS4_PYTHON (a venv with transformers 4.x) not set")


def expected_codes(verdict: dict) -> set[str]:
    """The HVA97x codes 4.x's recorded behaviour calls for: a refusal, or a reading that differs from 5's."""
    v4, v5 = verdict["v4"], verdict["v5"]
    codes = set()
    if "does not exist or is not currently imported" in v4.get("tokenizer_error", ""):
        codes.add("HVA970")
    if "'list' object has no attribute 'keys'" in v4.get("tokenizer_error", ""):
        codes.add("HVA971")
    if "config" in v4 and v4["config"] != v5["config"]:
        codes.add("HVA972")
    if "does not recognize this architecture" in v4.get("config_error", ""):
        codes.add("HVA974")
    return codes


def codes_of(folder: Path) -> set[str]:
    report = audit(folder, target_kind="transformers<5")
    return {f.code for f in report.findings if f.code.startswith("HVA97")}


def probe(python: str, folder: Path) -> dict:
    done = subprocess.run([python, str(PROBE), str(folder)], capture_output=True, text=True, timeout=300, check=True)
    reading = json.loads(done.stdout)
    for key in ("transformers", "tokenizers"):
        reading.pop(key)
    for key in ("config_error", "tokenizer_error"):
        if key in reading:
            reading[key] = reading[key].splitlines()[0]
    return reading


@pytest.fixture(scope="module")
def cases(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("transformers4")
    return {c.name: build(root / c.name, c.name) for c in CASES}


def test_every_case_has_a_verdict_from_the_last_4x() -> None:
    assert set(VERDICTS["cases"]) == set(CASE)
    assert VERDICTS["reader"].startswith(f"transformers {TRANSFORMERS4_VERSION} ")
    assert sorted(MODEL_TYPES) == VERDICTS["model_types"]
    assert ROPE_THETA_DEFAULTS == VERDICTS["rope_theta_defaults"] and ROPE_THETA_DEFAULTS["llama"] == 10000.0
    assert ROPE_LOCAL_BASE_FREQ_DEFAULTS == VERDICTS["rope_local_base_freq_defaults"]
    assert PARTIAL_ROTARY_FACTOR_DEFAULTS == VERDICTS["partial_rotary_factor_defaults"]
    assert ROPE_SCALING_DEFAULTS == VERDICTS["rope_scaling_defaults"]


@pytest.mark.parametrize("name", sorted(CASE))
def test_rules_fire_exactly_where_4x_refused_or_read_otherwise(cases: dict[str, Path], name: str) -> None:
    """4.x stops at the first failure (the class name before the list), so a case of one class decides each
    rule alone; a case of several gives at least what 4.x reached."""
    verdict = VERDICTS["cases"][name]
    fired = codes_of(cases[name])
    assert fired == set(CASE[name].says)
    if len(fired - {"HVA973"}) == 1:
        assert fired - {"HVA973"} == expected_codes(verdict)
    else:
        assert expected_codes(verdict) <= fired


def test_each_error_rule_has_a_case_where_4x_shows_it_alone() -> None:
    alone = {code for c in CASES for code in expected_codes(VERDICTS["cases"][c.name]) if len(c.says) == 1}
    assert alone == {"HVA970", "HVA971", "HVA972", "HVA974"}


def test_template_only_in_jinja_is_read_by_4_57_but_said_as_information(cases: dict[str, Path]) -> None:
    verdict = VERDICTS["cases"]["v5_template_only_in_jinja"]
    assert verdict["v4"]["tokenizer"]["chat"] == verdict["v5"]["tokenizer"]["chat"]  # 4.57.6 reads the file
    report = audit(cases["v5_template_only_in_jinja"], target_kind="transformers4")
    (found,) = [f for f in report.findings if f.code == "HVA973"]
    assert found.severity.value == "info" and "before 4.47" in found.message
    assert report.exit_code() == 0


def test_messages_quote_what_4x_said(cases: dict[str, Path]) -> None:
    report = audit(cases["v5_chat_llama"], target_kind="transformers<5")
    by_code = {f.code: f for f in report.findings}
    v4 = VERDICTS["cases"]["v5_chat_llama"]["v4"]
    assert v4["tokenizer_error"] in by_code["HVA970"].message
    assert "rope_theta 10000.0 (its default) instead of 500000.0" in by_code["HVA972"].message
    assert v4["config"]["rope_theta"] == 10000.0 and v4["config"]["rope_scaling"] is None
    said = VERDICTS["cases"]["v5_extra_special_tokens_list"]["v4"]["tokenizer_error"]
    assert said in by_code["HVA971"].message
    assert report.exit_code() == 1


def test_recorded_fixes_read_alike_in_both_versions() -> None:
    for name, verdict in VERDICTS["cases"].items():
        if name == "v5_model_type_unknown_to_4x":
            assert "fixed_v4" not in verdict  # no file edit makes 4.x run a newer architecture
            continue
        assert verdict["fixed_v4"] == verdict["fixed_v5"] == verdict["v5"], name


def test_fix_writes_the_form_both_read(cases: dict[str, Path], tmp_path: Path, run_cli) -> None:
    out = tmp_path / "fixed"
    code, stdout, _ = run_cli("check", cases["v5_chat_llama"], "--target", "transformers<5", "--fix", "--output", out)
    assert code == 0, stdout
    assert codes_of(out) == set()
    tok_config = json.loads((out / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert tok_config["tokenizer_class"] == "PreTrainedTokenizerFast"
    assert tok_config["additional_special_tokens"] == ["<|im_start|>", "<|im_end|>"]
    assert tok_config["extra_special_tokens"] == {}
    config = json.loads((out / "config.json").read_text(encoding="utf-8"))
    assert config["rope_theta"] == 500000.0 and config["rope_scaling"]["rope_type"] == "llama3"
    # transformers 5 (here) reads the fixed copy as it read the original
    assert probe(sys.executable, out) == VERDICTS["cases"]["v5_chat_llama"]["v5"]


def test_a_transformers4_checkpoint_stays_quiet(minilm_dir: Path) -> None:
    assert codes_of(minilm_dir) == set()


def test_alias_and_refusal(cases: dict[str, Path], run_cli) -> None:
    folder = cases["v5_plain"]
    assert run_cli("check", folder, "--target", "transformers4")[0] == run_cli("check", folder, "--target",
                                                                               "transformers<5")[0] == 1
    code, _, err = run_cli("check", folder, "--target", "transformers3")
    assert code == 2 and "transformers<5" in err and "transformers4" in err


def test_plain_check_does_not_import_the_target(cases: dict[str, Path]) -> None:
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "hf_vocab_audit", "check", str(cases["v5_plain"])],
                          capture_output=True, text=True, timeout=120, cwd=TESTS.parent)
    assert done.returncode == 0, done.stdout
    assert "hf_vocab_audit.facts.transformers4" not in done.stderr
    assert "hf_vocab_audit.facts.transformers4_tables" not in done.stderr


@live
@pytest.mark.parametrize("name", sorted(CASE))
def test_live_4x_still_says_what_was_recorded(cases: dict[str, Path], name: str) -> None:
    assert V4_PYTHON is not None
    assert probe(V4_PYTHON, cases[name]) == VERDICTS["cases"][name]["v4"]


@live
def test_live_fixed_copy_loads_in_4x_as_5_read_the_original(cases: dict[str, Path], tmp_path: Path, run_cli) -> None:
    assert V4_PYTHON is not None
    out = tmp_path / "fixed"
    assert run_cli("check", cases["v5_chat_llama"], "--target", "transformers<5", "--fix", "--output", out)[0] == 0
    original_v5 = probe(sys.executable, cases["v5_chat_llama"])
    assert probe(V4_PYTHON, out) == probe(sys.executable, out) == original_v5
    assert "tokenizer_error" in probe(V4_PYTHON, cases["v5_chat_llama"])  # and the original did not load


@live
@pytest.mark.parametrize("name", sorted(set(CASE) - {"v5_model_type_unknown_to_4x", "v5_chat_llama"}))
def test_live_every_fixed_case_loads_in_4x_as_5_read_it(cases: dict[str, Path], tmp_path: Path, run_cli,
                                                        name: str) -> None:
    """The fix of each class, not only the chat model's: a rope_scaling 4.x's own config class refuses (Phi-3's
    longrope with the keys 5 keeps in rope_parameters) is a fix that does not load."""
    assert V4_PYTHON is not None
    out = tmp_path / "fixed"
    assert run_cli("check", cases[name], "--target", "transformers<5", "--fix", "--output", out)[0] == 0
    assert probe(V4_PYTHON, out) == probe(sys.executable, out) == probe(sys.executable, cases[name])


V4_SAVE = """
import sys
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import LlamaConfig, PreTrainedTokenizerFast
vocab = {f"t{i}": i for i in range(100)}
vocab.update({"<s>": 100, "</s>": 101, "<unk>": 102})
backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
backend.pre_tokenizer = pre_tokenizers.Whitespace()
tok = PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
                              additional_special_tokens=["<|im_start|>", "<|im_end|>"])
tok.chat_template = "{% for m in messages %}<|im_start|>{{ m['content'] }}<|im_end|>{% endfor %}"
tok.save_pretrained(sys.argv[1])
LlamaConfig(vocab_size=105, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
            rope_theta=500000.0, rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
            "high_freq_factor": 4.0, "original_max_position_embeddings": 64}).save_pretrained(sys.argv[1])
"""


@live
def test_live_a_checkpoint_saved_by_4x_stays_quiet(tmp_path: Path) -> None:
    """Saved the 4.x way (4.57.6 writes the template to chat_template.jinja too: HVA973, information only)."""
    assert V4_PYTHON is not None
    subprocess.run([V4_PYTHON, "-c", V4_SAVE, str(tmp_path)], check=True, capture_output=True, timeout=300)
    assert codes_of(tmp_path) == {"HVA973"}
    assert probe(sys.executable, tmp_path) == probe(V4_PYTHON, tmp_path)  # and 5 reads it as 4.x does


def test_the_4x_form_written_by_hand_stays_quiet(cases: dict[str, Path], tmp_path: Path) -> None:
    """The keys 4.x writes (tokenizer_class PreTrainedTokenizerFast, additional_special_tokens, rope_theta and
    rope_scaling at the top, the template in tokenizer_config.json): nothing to say."""
    import shutil

    folder = shutil.copytree(cases["v5_chat_llama"], tmp_path / "v4form")
    tok_config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    tok_config.update(tokenizer_class="PreTrainedTokenizerFast", additional_special_tokens=tok_config.pop(
        "extra_special_tokens"), chat_template=(folder / "chat_template.jinja").read_text(encoding="utf-8"))
    (folder / "tokenizer_config.json").write_text(json.dumps(tok_config), encoding="utf-8")
    (folder / "chat_template.jinja").unlink()
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    rope = config.pop("rope_parameters")
    config.update(rope_theta=rope.pop("rope_theta"), rope_scaling=rope)
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    assert codes_of(folder) == set()
    assert audit(folder, target_kind="transformers<5").exit_code() == 0


# Qwen2.5-VL's config.json as the Hub ships it (saved by 4.x): mrope, the "type" a 4.x config turns into "default".
QWEN25_VL_4X = {"model_type": "qwen2_5_vl", "architectures": ["Qwen2_5_VLForConditionalGeneration"],
                "rope_theta": 1000000.0, "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]},
                "vocab_size": 151936, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 1,
                "num_attention_heads": 4, "num_key_value_heads": 2}


def _qwen25_vl_saved_by_5(folder: Path) -> Path:
    import transformers

    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(QWEN25_VL_4X), encoding="utf-8")
    transformers.AutoConfig.from_pretrained(folder).save_pretrained(folder)
    return folder


def test_mrope_section_under_a_default_rope_type_is_reported_and_fixed(tmp_path: Path, run_cli) -> None:
    """transformers 5 writes Qwen2.5-VL's mrope as rope_parameters with rope_type "default" and mrope_section: 4.x
    reads no rope_scaling then, and its attention indexes rope_scaling["mrope_section"] (TypeError on None)."""
    import transformers

    folder = _qwen25_vl_saved_by_5(tmp_path / "vl")
    params = json.loads((folder / "config.json").read_text(encoding="utf-8"))["text_config"]["rope_parameters"]
    assert params["rope_type"] == "default" and params["mrope_section"] == [16, 24, 24]  # what 5 wrote
    (found,) = [f for f in audit(folder, target_kind="transformers<5").findings if f.code == "HVA972"]
    assert found.location.key == "text_config.rope_parameters" and "mrope_section" in found.message
    out = tmp_path / "fixed"
    assert run_cli("check", folder, "--target", "transformers<5", "--fix", "--output", out, "--allow-partial")[0] == 0
    fixed = json.loads((out / "config.json").read_text(encoding="utf-8"))["text_config"]["rope_scaling"]
    assert fixed["mrope_section"] == params["mrope_section"] and fixed["type"] == "mrope"
    read = transformers.AutoConfig.from_pretrained
    assert read(out).text_config.rope_parameters == read(folder).text_config.rope_parameters  # 5 reads it alike


READ_MROPE = "import sys, transformers; print(transformers.AutoConfig.from_pretrained(sys.argv[1]).text_config.rope_scaling)"


@live
def test_live_4x_reads_the_mrope_section_only_after_the_fix(tmp_path: Path, run_cli) -> None:
    assert V4_PYTHON is not None
    folder = _qwen25_vl_saved_by_5(tmp_path / "vl")
    out = tmp_path / "fixed"
    assert run_cli("check", folder, "--target", "transformers<5", "--fix", "--output", out, "--allow-partial")[0] == 0

    def v4(path: Path) -> str:
        done = subprocess.run([V4_PYTHON, "-c", READ_MROPE, str(path)], capture_output=True, text=True, timeout=300,
                              check=True)
        return done.stdout.strip().splitlines()[-1]

    assert v4(folder) == "None"
    assert "'mrope_section': [16, 24, 24]" in v4(out)


# gpt-oss-20b's rope keys as the Hub ships them (tiny otherwise): the yarn scaling 4.57.6's GptOssConfig defaults to.
GPT_OSS_4X = {"model_type": "gpt_oss", "architectures": ["GptOssForCausalLM"], "rope_theta": 150000,
              "rope_scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0,
                               "original_max_position_embeddings": 4096, "rope_type": "yarn", "truncate": False},
              "vocab_size": 201088, "hidden_size": 64, "intermediate_size": 64, "num_hidden_layers": 2,
              "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "num_local_experts": 4,
              "num_experts_per_tok": 2}
READ_ROPE = ("import sys, json, transformers; c = transformers.AutoConfig.from_pretrained(sys.argv[1]); "
             "print(json.dumps([c.rope_theta, c.rope_scaling]))")


def _gpt_oss_saved_by_5(folder: Path) -> Path:
    import transformers

    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(GPT_OSS_4X), encoding="utf-8")
    transformers.AutoConfig.from_pretrained(folder).save_pretrained(folder)
    return folder


def test_a_scaling_4x_defaults_to_anyway_is_not_reported(tmp_path: Path) -> None:
    """gpt-oss saved by transformers 5: rope_parameters only, but 4.57.6's GptOssConfig defaults to the same
    rope_theta and yarn scaling (the recorded tables), so 4.x runs it as 5 does: nothing to report."""
    folder = _gpt_oss_saved_by_5(tmp_path / "oss")
    saved = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    assert "rope_scaling" not in saved or saved["rope_scaling"] is None
    assert saved["rope_parameters"]["rope_type"] == "yarn"
    assert ROPE_THETA_DEFAULTS["gpt_oss"] == 150000.0
    assert [f.code for f in audit(folder, target_kind="transformers<5").findings if f.code == "HVA972"] == []


@live
def test_live_4x_reads_gpt_oss_scaling_from_its_defaults(tmp_path: Path) -> None:
    assert V4_PYTHON is not None
    folder = _gpt_oss_saved_by_5(tmp_path / "oss")
    done = subprocess.run([V4_PYTHON, "-c", READ_ROPE, str(folder)], capture_output=True, text=True, timeout=300,
                          check=True)
    theta, scaling = json.loads(done.stdout.strip().splitlines()[-1])
    wanted = dict(GPT_OSS_4X["rope_scaling"])
    assert theta == GPT_OSS_4X["rope_theta"] and scaling == wanted


def _neox_saved_by_5(folder: Path) -> Path:
    """A GPT-NeoX rotating every dimension (rotary_pct 1.0; 4.57.6's default is 0.25), saved by transformers 5."""
    import transformers

    transformers.GPTNeoXConfig(rotary_pct=1.0, hidden_size=64, num_attention_heads=4, num_hidden_layers=1,
                               intermediate_size=64, vocab_size=105).save_pretrained(folder)
    return folder


def test_gpt_neox_rotary_fraction_is_fixed_under_the_key_4x_reads(tmp_path: Path, run_cli) -> None:
    """4.x's GPT-NeoX reads ``rotary_pct`` (its config sets partial_rotary_factor from it): the fix writes that."""
    folder = _neox_saved_by_5(tmp_path / "neox")
    assert json.loads((folder / "config.json").read_text(encoding="utf-8"))["rope_parameters"][
        "partial_rotary_factor"] == 1.0
    (found,) = [f for f in audit(folder, target_kind="transformers<5").findings if f.code == "HVA972"]
    assert "rotary_pct 0.25 (its default) instead of 1.0" in found.message
    out = tmp_path / "fixed"
    assert run_cli("check", folder, "--target", "transformers<5", "--fix", "--output", out, "--allow-partial")[0] == 0
    assert json.loads((out / "config.json").read_text(encoding="utf-8"))["rotary_pct"] == 1.0


@live
def test_live_4x_reads_the_fixed_gpt_neox_rotary_fraction(tmp_path: Path, run_cli) -> None:
    assert V4_PYTHON is not None
    folder = _neox_saved_by_5(tmp_path / "neox")
    out = tmp_path / "fixed"
    assert run_cli("check", folder, "--target", "transformers<5", "--fix", "--output", out, "--allow-partial")[0] == 0
    code = "import sys, transformers; print(transformers.AutoConfig.from_pretrained(sys.argv[1]).rotary_pct)"

    def v4(path: Path) -> str:
        done = subprocess.run([V4_PYTHON, "-c", code, str(path)], capture_output=True, text=True, timeout=300,
                              check=True)
        return done.stdout.strip().splitlines()[-1]

    assert (v4(folder), v4(out)) == ("0.25", "1.0")


def test_the_axial_rope_of_a_vision_model_is_not_reported(tmp_path: Path) -> None:
    """Pixtral saved by transformers 5: rope_parameters {"rope_type": "axial"}, a type 4.57.6 does not have and
    that its Pixtral never reads as rope_scaling (it computes its 2D rope itself): nothing for 4.x to lose."""
    import transformers

    folder = tmp_path / "pixtral"
    transformers.PixtralVisionConfig(hidden_size=64, intermediate_size=64, num_hidden_layers=1,
                                     num_attention_heads=4).save_pretrained(folder)
    params = json.loads((folder / "config.json").read_text(encoding="utf-8"))["rope_parameters"]
    assert params["rope_type"] == "axial"
    assert [f for f in audit(folder, target_kind="transformers<5").findings if f.code == "HVA972"] == []


def _voxtral_saved_by_5(folder: Path) -> Path:
    import transformers

    transformers.VoxtralConfig().save_pretrained(folder)
    return folder


def test_a_text_theta_4x_fills_in_from_the_outer_class_is_not_reported(tmp_path: Path) -> None:
    """Voxtral saved by transformers 5: text_config.rope_parameters only, rope_theta 1e8; 4.57.6's VoxtralConfig
    fills the text config's missing keys from its own defaults (rope_theta 1e8), not LlamaConfig's 10000."""
    folder = _voxtral_saved_by_5(tmp_path / "voxtral")
    text = json.loads((folder / "config.json").read_text(encoding="utf-8"))["text_config"]
    assert text["rope_parameters"]["rope_theta"] == 100000000.0 and "rope_theta" not in text
    assert [f for f in audit(folder, target_kind="transformers<5").findings if f.code == "HVA972"] == []


@live
def test_live_4x_reads_voxtral_text_theta_from_its_outer_defaults(tmp_path: Path) -> None:
    assert V4_PYTHON is not None
    folder = _voxtral_saved_by_5(tmp_path / "voxtral")
    code = "import sys, transformers; print(transformers.AutoConfig.from_pretrained(sys.argv[1]).text_config.rope_theta)"
    done = subprocess.run([V4_PYTHON, "-c", code, str(folder)], capture_output=True, text=True, timeout=300, check=True)
    assert float(done.stdout.strip().splitlines()[-1]) == 100000000.0
