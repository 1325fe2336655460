"""HVA84x: a full fine-tuned checkpoint against its base (``check FT --base BASE``). Every fine-tune is made
with transformers' own classes from a padded base (128 rows for 100 tokens, as Qwen and Gemma pad), and what
each finding claims is shown by loading it back on CPU."""

from __future__ import annotations

import json

import pytest
import torch
from builders import edit_json, make_tokenizer

from hf_vocab_audit import audit

TEMPLATE = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"


def _config(rows: int = 128):
    from transformers import LlamaConfig

    return LlamaConfig(vocab_size=rows, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                       num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=128,
                       bos_token_id=1, eos_token_id=2, pad_token_id=3)


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    from transformers import LlamaForCausalLM

    folder = tmp_path_factory.mktemp("base")
    make_tokenizer(folder, 100, chat_template=TEMPLATE)
    torch.manual_seed(0)
    LlamaForCausalLM(_config()).save_pretrained(folder)
    return folder


def fine_tune(base, folder, *, tokens=(), resize=None, init_new=True, touch_old=(), mean_resizing=False):
    """The base loaded, its tokenizer given ``tokens``, resized to ``resize`` when asked, new rows initialised to
    the mean of the old ones (``init_new``), the rows of ``touch_old`` overwritten; saved to ``folder``."""
    from transformers import AutoTokenizer, LlamaForCausalLM

    tok = AutoTokenizer.from_pretrained(base)
    if tokens:
        tok.add_special_tokens({"additional_special_tokens": list(tokens)})
    model = LlamaForCausalLM.from_pretrained(base)
    if resize is not None:
        model.resize_token_embeddings(resize, mean_resizing=mean_resizing)
    with torch.no_grad():
        for matrix in (model.get_input_embeddings().weight, model.get_output_embeddings().weight):
            if init_new:
                for i in range(100, len(tok)):
                    matrix[i] = matrix[:100].mean(0)
            for i in touch_old:
                matrix[i] += 1.0
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def codes(folder, base, **kwargs):
    report = audit(folder, base=str(base), **kwargs)
    return report, {f.code: f for f in report.findings if f.code.startswith("HVA84")}


def test_a_healthy_fine_tune_is_quiet(base, tmp_path):
    folder = fine_tune(base, tmp_path / "ft", tokens=["<tool>"])
    report, found = codes(folder, base, weights=True)
    assert found == {}
    assert {"HVA840", "HVA841", "HVA842", "HVA843", "HVA844", "HVA845", "HVA846"} <= set(report.rules_run)


def test_resize_to_len_tokenizer_cuts_the_bases_padding_rows(base, tmp_path):
    from transformers import LlamaForCausalLM

    folder = fine_tune(base, tmp_path / "ft", resize=100)
    model = LlamaForCausalLM.from_pretrained(folder)
    assert model.get_input_embeddings().num_embeddings == 100  # transformers shrank it without a word
    model(torch.arange(100).unsqueeze(0))  # yet every token keeps its row: the fine-tune itself runs
    report, found = codes(folder, base)
    assert "HVA840" not in found
    hit = found["HVA846"]
    assert hit.severity.value == "warning" and hit.details["rows"] == 100 and hit.details["base_rows"] == 128
    assert hit.details["base_tokens"] == 100 and "padding row(s) were cut" in hit.message
    assert hit.location.file == "model.safetensors" and hit.details["base_file"] == "model.safetensors"
    assert hit.details["base"] == str(base) and report.exit_code() == 0


def test_a_resize_below_the_bases_tokens_cuts_token_rows(base, tmp_path):
    folder = fine_tune(base, tmp_path / "ft", resize=96)
    _report, found = codes(folder, base)
    assert "HVA846" not in found
    hit = found["HVA840"]
    assert hit.severity.value == "error" and hit.details["rows"] == 96 and hit.details["base_rows"] == 128


def test_a_trainer_nulling_bos_and_changing_eos_is_a_warning(base, tmp_path):
    from transformers import LlamaForCausalLM

    folder = fine_tune(base, tmp_path / "ft")
    edit_json(folder / "generation_config.json", bos_token_id=None, eos_token_id=9)
    model = LlamaForCausalLM.from_pretrained(folder)
    with pytest.raises(ValueError, match="bos_token_id"):  # generate() without a prompt needs bos
        model.generate(max_new_tokens=2, do_sample=False)
    assert model.generation_config.eos_token_id == 9  # generation no longer stops at the base's eos 2
    _report, found = codes(folder, base)
    hit = found["HVA841"]
    assert hit.severity.value == "warning" and hit.location.file == "generation_config.json"
    messages = [f.message for f in audit(folder, base=str(base)).findings if f.code == "HVA841"]
    assert any("bos_token_id: the base has 1, the fine-tune null" in m for m in messages)
    assert any("eos_token_id: the base has 2, the fine-tune 9" in m for m in messages)


def test_the_chat_template_lost_and_changed(base, tmp_path):
    from transformers import AutoTokenizer

    lost = fine_tune(base, tmp_path / "lost")
    (lost / "chat_template.jinja").unlink(missing_ok=True)
    edit_json(lost / "tokenizer_config.json", chat_template=None)
    assert AutoTokenizer.from_pretrained(lost).chat_template is None
    _report, found = codes(lost, base)
    assert set(found) == {"HVA842"} and found["HVA842"].severity.value == "warning"
    changed = fine_tune(base, tmp_path / "changed")
    tok = AutoTokenizer.from_pretrained(changed)
    tok.chat_template = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    tok.save_pretrained(changed)
    _report, found = codes(changed, base)
    assert set(found) == {"HVA843"} and found["HVA843"].severity.value == "info"


def test_a_new_token_left_in_the_bases_padding_row(base, tmp_path):
    from transformers import AutoTokenizer, LlamaForCausalLM

    folder = fine_tune(base, tmp_path / "ft", tokens=["<tool>"], init_new=False)
    tok = AutoTokenizer.from_pretrained(folder)
    i = tok.convert_tokens_to_ids("<tool>")
    ours = LlamaForCausalLM.from_pretrained(folder).get_input_embeddings().weight[i]
    theirs = LlamaForCausalLM.from_pretrained(base).get_input_embeddings().weight[i]
    assert i == 100 and torch.equal(ours, theirs)  # no resize needed, so nothing initialised the row
    _report, found = codes(folder, base, weights=True)
    hit = found["HVA844"]
    assert hit.severity.value == "error" and hit.location.token_id == 100 and hit.details["base_rows"] == 128
    _report, without = codes(folder, base)
    assert "HVA844" not in without  # the rows are read with --weights only


def test_old_rows_touched_by_the_resize(base, tmp_path):
    tokens = ["<tool>", "<call>", "<end>"]
    folder = fine_tune(base, tmp_path / "ft", tokens=tokens, touch_old=(97, 98, 99))
    _report, found = codes(folder, base, weights=True)
    hit = found["HVA845"]
    assert hit.severity.value == "warning" and hit.details["ids"] == [97, 98, 99]
    shifted = fine_tune(base, tmp_path / "shifted", tokens=tokens[:2], touch_old=(50, 51))  # off-by-n, mid-vocab
    _report, found = codes(shifted, base, weights=True)
    assert found["HVA845"].details["ids"] == [50, 51]
    # Scattered rows changed, the rest the base's: the tokens the data trained (an untied input row without a
    # gradient stays bit for bit the base's under AdamW), not a resize's write.
    sparse = fine_tune(base, tmp_path / "sparse", tokens=tokens, touch_old=(1, 5, 6, 7, 8, 9, 10))
    _report, found = codes(sparse, base, weights=True)
    assert "HVA845" not in found
    trained = fine_tune(base, tmp_path / "trained", tokens=["<tool>"], touch_old=range(100))
    _report, found = codes(trained, base, weights=True)
    assert "HVA845" not in found  # every old row changed: the embeddings were trained, not broken


def test_an_adapter_keeps_its_base_meaning(base, tmp_path):
    from family_builders import adapter

    folder = adapter(base, tmp_path / "a", save_tokenizer=False)
    report = audit(folder, base=str(base))
    assert not any(f.code.startswith("HVA84") for f in report.findings)


@pytest.mark.parametrize("make", ["missing", "empty", "adapter"])
def test_a_bad_base_is_one_line_exit_2(base, tmp_path, run_cli, make):
    from family_builders import adapter

    ft = fine_tune(base, tmp_path / "ft")
    other = tmp_path / "other"
    if make == "empty":
        other.mkdir()
    elif make == "adapter":
        adapter(base, other, save_tokenizer=False)
    code, out, err = run_cli("check", ft, "--base", other)
    assert code == 2
    line = (out + err).strip().splitlines()
    assert len(line) == 1 and "--base" in line[0] and "other" in line[0]


def test_cli_json_names_both_artifacts(base, tmp_path, run_cli):
    folder = fine_tune(base, tmp_path / "ft", resize=96)
    code, out, _err = run_cli("check", folder, "--base", base, "--format", "json", "--select", "HVA840")
    assert code == 1
    finding = json.loads(out)["findings"][0]
    assert finding["code"] == "HVA840" and finding["location"]["file"] == "model.safetensors"
    assert finding["details"]["base"] == str(base) and finding["details"]["base_file"] == "model.safetensors"


def test_a_hub_base_is_read_from_its_headers(base, tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    from hub_server import HubServer, Repo

    folder = fine_tune(base, tmp_path / "ft", resize=96)
    root = Path(__file__).resolve().parents[2]
    with HubServer({"org/base": Repo.from_folder(base)}) as server:
        env = {**os.environ, "HF_ENDPOINT": server.url, "HF_HOME": str(tmp_path / "hf-home"), "HF_HUB_OFFLINE": "0",
               "PYTHONPATH": str(root), "HF_HUB_DISABLE_TELEMETRY": "1"}
        env.pop("HF_TOKEN", None)
        proc = subprocess.run([sys.executable, "-m", "hf_vocab_audit", "check", str(folder), "--base", "org/base",
                               "--weights", "--allow-partial", "--format", "json"],
                              env=env, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    hit = next(f for f in report["findings"] if f["code"] == "HVA840")
    assert hit["details"]["base"] == "org/base" and hit["details"]["base_rows"] == 128
    skipped = {s["rule"]: s["reason"] for s in report["skipped"] if s.get("rule")}
    assert "Hub id" in skipped["HVA844"] and "Hub id" in skipped["HVA845"]


def test_the_shrunk_finding_carries_the_fix_that_copies_the_bases_rows(base, tmp_path):
    """The fix is data on the finding (what --fix does): the base as given, both tensors, the base's rows; safe for
    padding only, and none (with the reason) when the rows cannot be appended as they are."""
    from hf_vocab_audit.core.fixes import Applicability, CopyBaseRows

    folder = fine_tune(base, tmp_path / "ft", resize=100)
    hits = [f for f in audit(folder, base=str(base)).findings if f.code == "HVA846"]
    assert [f.fix.applicability for f in hits if f.fix] == [Applicability.SAFE] * 2
    assert sorted((e for f in hits if f.fix for e in f.fix.edits), key=repr) == [
        CopyBaseRows(str(base), name, name, 128) for name in ("lm_head.weight", "model.embed_tokens.weight")]
    make_tokenizer(folder, 96, added_special=["<tool>"])  # id 96: w92 in the base
    hits = [f for f in audit(folder, base=str(base)).findings if f.code == "HVA846"]
    assert len(hits) == 2 and all(f.fix is None for f in hits)
    assert all("'<tool>' (id 96) is not the base's token at that id" in (f.hint or "") for f in hits)
