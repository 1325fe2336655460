"""``--target sglang|tgi|mlx-lm``: HVA980-HVA983, from each engine's entry in ``facts.consumers`` (read in the
engines' source at the versions named there; none of them runs here). What is transformers' (where a template is
saved, how the tokenizer loads it, the token a template closes a turn with) is decided by running transformers."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from builders import CHATML, DELETE, checkpoint, edit_json

from hf_vocab_audit import audit
from hf_vocab_audit.core.options import TP_TARGETS, AuditOptions, TargetKind
from hf_vocab_audit.facts.consumers import ENGINE_TARGETS, MLX_LM, SGLANG, TGI, VLLM, stop_ids
from hf_vocab_audit.facts.sources.registry import resolve_source
from hf_vocab_audit.rules.serving_chat import ANSWER, USER

IM_END = 105


def codes(report, code):
    return [f for f in report.findings if f.code == code]


def chatml(folder):
    """A ChatML model saved by transformers (5.24): eos </s> (id 2), <|im_end|> at id 105, the template written
    where transformers' save_pretrained writes it."""
    return checkpoint(folder, "llama", 106, tokenizer_vocab=104, added_special=["<|im_start|>", "<|im_end|>"],
                      chat_template=CHATML)


def template_in_tokenizer_config(folder):
    """The older layout: the template as tokenizer_config.json's chat_template, no chat_template.jinja."""
    (folder / "chat_template.jinja").unlink()
    edit_json(folder / "tokenizer_config.json", chat_template=CHATML)
    return folder


def facts_of(folder):
    return resolve_source(folder, remote=False).gather(AuditOptions())


# ---- the table


def test_every_engine_target_has_an_entry_and_tp_targets_are_those_with_a_heads_rule():
    engines = {k.value for k in TargetKind} - {TargetKind.GGUF.value, TargetKind.TRANSFORMERS4.value}
    assert set(ENGINE_TARGETS) == engines
    assert {k.value for k in TP_TARGETS} == {name for name, c in ENGINE_TARGETS.items() if c.heads is not None}
    for consumer in ENGINE_TARGETS.values():
        assert consumer.template_load is not None and consumer.stops is not None and consumer.without_template
        assert consumer.template_files and consumer.template_source and consumer.stops.source
        assert consumer.heads is None or consumer.tp_source or consumer is VLLM


# ---- the template where the engine reads it (HVA980)


def test_transformers_saves_the_template_where_tgi_does_not_read_it(tmp_path):
    import transformers

    folder = chatml(tmp_path / "m")
    assert (folder / "chat_template.jinja").is_file()  # transformers' save_pretrained wrote it there...
    assert "chat_template" not in json.loads((folder / "tokenizer_config.json").read_text())  # ...and only there
    assert transformers.AutoTokenizer.from_pretrained(folder).chat_template == CHATML  # transformers loads it
    (f,) = codes(audit(folder, target_kind="tgi"), "HVA980")
    assert f.location.file == "chat_template.jinja" and f.severity.value == "warning"
    assert "tgi 3.3.4 resolves no chat template" in f.message and "template not found" in f.message
    assert codes(audit(folder, target_kind="tgi"), "HVA981") == []  # nothing rendered, nothing to compare
    # the engines that load the tokenizer through transformers take it
    for target in ("sglang", "mlx-lm"):
        assert codes(audit(folder, target_kind=target), "HVA980") == []
    assert codes(audit(folder, target_kind="vllm"), "HVA966") == []


def test_template_in_tokenizer_config_is_what_tgi_reads(tmp_path):
    import transformers

    folder = template_in_tokenizer_config(chatml(tmp_path / "m"))
    edit_json(folder / "generation_config.json", eos_token_id=[2, IM_END])
    assert transformers.AutoTokenizer.from_pretrained(folder).chat_template == CHATML
    report = audit(folder, target_kind="tgi")
    assert codes(report, "HVA980") == [] and codes(report, "HVA981") == []


def test_a_tokenizer_config_field_tgi_cannot_parse_drops_its_template(tmp_path):
    folder = template_in_tokenizer_config(chatml(tmp_path / "m"))
    edit_json(folder / "tokenizer_config.json", add_bos_token="yes")  # serde: Option<bool>
    (f,) = codes(audit(folder, target_kind="tgi"), "HVA980")
    assert f.location.file == "tokenizer_config.json" and "add_bos_token is not a boolean" in f.message


def test_tgi_takes_only_the_default_of_a_list_of_templates(tmp_path):
    folder = template_in_tokenizer_config(chatml(tmp_path / "m"))
    edit_json(folder / "tokenizer_config.json", chat_template=[{"name": "tool_use", "template": CHATML}])
    (f,) = codes(audit(folder, target_kind="tgi"), "HVA980")
    assert 'no template named "default"' in f.message
    edit_json(folder / "tokenizer_config.json", chat_template=[{"name": "default", "template": CHATML}])
    assert codes(audit(folder, target_kind="tgi"), "HVA980") == []


def test_a_processor_chat_template_json_is_tgis_but_not_the_tokenizers(tmp_path):
    import transformers

    folder = checkpoint(tmp_path / "m", "llama", 104)  # no template; no processor class
    (folder / "chat_template.json").write_text(json.dumps({"chat_template": CHATML}))
    assert transformers.AutoTokenizer.from_pretrained(folder).chat_template is None
    assert codes(audit(folder, target_kind="tgi"), "HVA980") == []  # router/src/server.rs reads it
    for target, says in (("sglang", "fails every request"), ("mlx-lm", "USER: ...")):
        (f,) = codes(audit(folder, target_kind=target), "HVA980")
        assert f.location.file == "chat_template.json" and says in f.message


def test_template_that_raises_fires_for_each_engine(tmp_path):
    folder = checkpoint(tmp_path / "m", "llama", 104, chat_template="{{ raise_exception('roles must alternate') }}")
    for target in ("sglang", "mlx-lm"):
        (f,) = codes(audit(folder, target_kind=target), "HVA980")
        assert "roles must alternate" in f.message


def test_base_model_without_any_template_is_quiet(tmp_path):
    folder = checkpoint(tmp_path / "m", "llama", 104)
    for target in ("sglang", "tgi", "mlx-lm"):
        report = audit(folder, target_kind=target)
        assert codes(report, "HVA980") == [] and codes(report, "HVA981") == []


# ---- the turn-closing token among the engine's stop ids (HVA981)


def _turn_closer(folder):
    import transformers

    tok = transformers.AutoTokenizer.from_pretrained(folder)
    text = tok.apply_chat_template([{"role": "user", "content": USER}, {"role": "assistant", "content": ANSWER}],
                                   tokenize=False)
    return tok.convert_tokens_to_ids(text.split(ANSWER, 1)[1].split("\n", 1)[0])


def test_tgi_ignores_an_integer_generation_config_eos(tmp_path):
    folder = template_in_tokenizer_config(chatml(tmp_path / "m"))
    assert _turn_closer(folder) == IM_END  # transformers renders <|im_end|> after the answer
    edit_json(folder / "generation_config.json", eos_token_id=IM_END)
    (f,) = codes(audit(folder, target_kind="tgi"), "HVA981")
    assert f.details["turn_end_id"] == IM_END and f.details["stop_ids"] == [2] and f.severity.value == "error"
    assert "reads that field: only a list" in f.message and f.location.file == "generation_config.json"
    assert codes(audit(folder, target_kind="vllm"), "HVA967") == []  # vLLM adds it to the tokenizer's eos
    assert codes(audit(folder, target_kind="sglang"), "HVA981") == []


def test_tgi_list_eos_replaces_the_tokenizers(tmp_path):
    folder = template_in_tokenizer_config(chatml(tmp_path / "m"))
    edit_json(folder / "generation_config.json", eos_token_id=[IM_END])
    assert stop_ids(TGI, facts_of(folder)) == {IM_END: "generation_config.json eos_token_id"}
    assert codes(audit(folder, target_kind="tgi"), "HVA981") == []


def test_sglang_reads_config_eos_where_vllm_does_not(tmp_path):
    folder = chatml(tmp_path / "m")
    edit_json(folder / "config.json", eos_token_id=[2, IM_END])  # generation_config.json says 2 only
    assert codes(audit(folder, target_kind="sglang"), "HVA981") == []
    assert [f.details["turn_end_id"] for f in codes(audit(folder, target_kind="vllm"), "HVA967")] == [IM_END]


def test_sglang_turn_end_not_a_stop_id_fires(tmp_path):
    folder = chatml(tmp_path / "m")
    (f,) = codes(audit(folder, target_kind="sglang"), "HVA981")
    assert f.details["engine"] == "sglang" and f.details["stop_ids"] == [2]
    assert "'<|im_end|>' (id 105)" in f.message and f.location.file == "generation_config.json"


def test_sglang_stops_at_an_added_eom_id(tmp_path):
    folder = checkpoint(tmp_path / "m", "llama", 106, tokenizer_vocab=104, added_special=["<|eot_id|>", "<|eom_id|>"])
    stops = stop_ids(SGLANG, facts_of(folder))
    assert stops[105] == "the added token '<|eom_id|>'" and 105 not in stop_ids(VLLM, facts_of(folder))


def test_mlx_lm_never_reads_generation_config(tmp_path):
    folder = chatml(tmp_path / "m")
    edit_json(folder / "generation_config.json", eos_token_id=[2, IM_END])
    (f,) = codes(audit(folder, target_kind="mlx-lm"), "HVA981")
    assert "reads that field: never" in f.message and f.location.file == "config.json"
    edit_json(folder / "config.json", eos_token_id=[2, IM_END])
    assert codes(audit(folder, target_kind="mlx-lm"), "HVA981") == []
    assert set(stop_ids(MLX_LM, facts_of(folder))) == {2, IM_END}


# ---- --tp (HVA982)


@pytest.fixture
def gqa(tmp_path):
    """8 attention heads, 2 KV heads, 104 rows (SGLang pads them to 128)."""
    return checkpoint(tmp_path / "g", "llama", 104, model={"num_attention_heads": 8, "num_key_value_heads": 2})


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_sglang_replicates_fewer_kv_heads(gqa, tp):
    assert codes(audit(gqa, target_kind="sglang", tp=tp), "HVA982") == []


def test_tgi_does_not_replicate_kv_heads(gqa):
    assert codes(audit(gqa, target_kind="tgi", tp=2), "HVA982") == []
    (f,) = codes(audit(gqa, target_kind="tgi", tp=4), "HVA982")
    assert f.location.key == "num_key_value_heads" and "--num-shard 4" in f.message
    assert "`num_key_value_heads` must be divisible by `num_shards` (got `num_key_value_heads`: 2" in f.message


def test_tgi_kv_heads_message_is_the_llama_attentions_only(tmp_path):
    """Only TGI 3.3.4's flash_llama_modeling.py raises on the KV heads; a Qwen2 (flash_qwen2_modeling.py) divides
    them unchecked: the split still fails, but not with the Llama code's ValueError."""
    folder = checkpoint(tmp_path / "q", "qwen2", 104, model={"num_attention_heads": 8, "num_key_value_heads": 2})
    (f,) = codes(audit(folder, target_kind="tgi", tp=4), "HVA982")
    assert f.location.key == "num_key_value_heads" and "must be divisible by `num_shards`" not in f.message
    assert "qwen2's attention divides num_key_value_heads (2) by the 4 shards unchecked" in f.message
    assert codes(audit(folder, target_kind="tgi", tp=2), "HVA982") == []


def test_sglang_heads_and_padded_vocabulary(gqa):
    edit_json(gqa / "config.json", num_attention_heads=6, num_key_value_heads=6, hidden_size=24)
    (f,) = codes(audit(gqa, target_kind="sglang", tp=4), "HVA982")
    assert f.location.key == "num_attention_heads" and "self.total_num_heads % tp_size == 0 (6 % 4)" in f.message
    (f,) = codes(audit(gqa, target_kind="sglang", tp=3), "HVA982")  # 6 heads split; 128 padded rows do not
    assert f.location.key == "vocab_size" and "128 is not divisible by 3" in f.message
    # TGI loads the whole lm_head when the vocabulary does not split: 6 heads over 3 shards pass
    assert codes(audit(gqa, target_kind="tgi", tp=3), "HVA982") == []
    assert codes(audit(gqa, target_kind="sglang", tp=3), "HVA965") == []  # vLLM's code stays vLLM's


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "hf_vocab_audit", "check", *args], capture_output=True, text=True,
                          timeout=120)


def test_cli_tp_needs_an_engine_with_tensor_parallelism(gqa):
    done = _cli(str(gqa), "--target", "mlx-lm", "--tp", "2")
    assert done.returncode == 2 and "--tp needs --target vllm, sglang or tgi" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    done = _cli(str(gqa), "--target", "tgi", "--tp", "4")
    assert done.returncode == 1 and "HVA982" in done.stdout
    done = _cli(str(gqa), "--target", "sglang", "--tool-call-parser", "hermes")
    assert done.returncode == 2 and "--tool-call-parser needs --target vllm" in done.stderr


# ---- the lm_head layout under --target (HVA983)


def _untied_without_head(folder):
    from safetensors.numpy import load_file, save_file

    tensors = load_file(folder / "model.safetensors")
    del tensors["lm_head.weight"]
    save_file(tensors, folder / "model.safetensors")
    return folder


@pytest.mark.parametrize(("target", "says"), [
    ("sglang", "uninitialised memory (torch.empty)"),
    ("tgi", "RuntimeError: weight lm_head.weight does not exist"),
    ("mlx-lm", "Missing parameters: lm_head.weight."),
    ("vllm", "Following weights were not initialized from checkpoint"),
])
def test_untied_without_head_says_what_the_target_does(tmp_path, target, says):
    folder = _untied_without_head(checkpoint(tmp_path / "m", "llama", 104))
    (f,) = codes(audit(folder, target_kind=target), "HVA983")
    assert says in f.message and f.severity.value == "error" and f.location.key == "tie_word_embeddings"
    assert codes(audit(folder), "HVA983") == []  # without --target: HVA960 alone


def test_healthy_untied_and_tied_heads_are_quiet(tmp_path):
    folder = checkpoint(tmp_path / "m", "llama", 104)  # untied, lm_head.weight saved
    tied = checkpoint(tmp_path / "t", "llama", 104)
    edit_json(tied / "config.json", tie_word_embeddings=True)  # a saved head anyway: HVA961, every engine ties
    for target in ("sglang", "tgi", "mlx-lm"):
        assert codes(audit(folder, target_kind=target), "HVA983") == []
        assert codes(audit(tied, target_kind=target), "HVA983") == []


# ---- nothing of this in a plain check


def test_plain_check_imports_no_engine_module(tmp_path):
    folder = chatml(tmp_path / "m")
    code = ("import sys; from hf_vocab_audit import audit; audit(sys.argv[1]); "
            "print('hf_vocab_audit.facts.served_template' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code, str(folder)], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "False", done.stderr


def test_config_without_eos_keeps_sglang_and_mlx_lm_on_the_tokenizer(tmp_path):
    folder = chatml(tmp_path / "m")
    edit_json(folder / "config.json", eos_token_id=DELETE)
    (folder / "generation_config.json").unlink()
    for consumer in (SGLANG, MLX_LM, TGI):
        assert stop_ids(consumer, facts_of(folder)) == {2: "the tokenizer's eos_token '</s>'"}
