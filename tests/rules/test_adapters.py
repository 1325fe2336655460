"""HVA8xx: PEFT adapters against their base; peft's own loading (PeftModel / AutoPeftModelForCausalLM) and a
forward on CPU decide each verdict."""

from __future__ import annotations

import json

import pytest
from builders import checkpoint
from family_builders import adapter, peft_load_error

from hf_vocab_audit import audit


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return checkpoint(tmp_path_factory.mktemp("base"), "llama", 104)


def adapter_codes(folder, **kwargs):
    return {f.code: f for f in audit(folder, **kwargs).findings if f.code.startswith("HVA8")}


def test_plain_lora_adapter_is_quiet(base, tmp_path):
    folder = adapter(base, tmp_path / "a", save_tokenizer=False)
    assert peft_load_error(base, folder) is None
    report = audit(folder)
    assert adapter_codes(folder) == {} and report.exit_code() == 0
    assert {"HVA801", "HVA802", "HVA803", "HVA804", "HVA805"} <= set(report.rules_run)


def test_resized_adapter_needs_the_base_resized_first(base, tmp_path):
    folder = adapter(base, tmp_path / "a", tokens=["<tool>", "</tool>"], resize=106)
    assert peft_load_error(base, folder) == "RuntimeError"  # size mismatch on the plain base
    assert peft_load_error(base, folder, resize_to=106, ids=[1, 104, 105, 2]) is None
    assert peft_load_error(base, folder, auto=True, ids=[1, 104, 105, 2]) is None
    codes = adapter_codes(folder)
    assert set(codes) == {"HVA801"} and codes["HVA801"].severity.value == "warning"
    facts = audit(folder).facts
    assert facts["adapter"]["saved_embedding"]["rows"] == 106 and facts["adapter"]["tokenizer_length"] == 106
    assert facts["adapter"]["base"] == str(base) and facts["input_embedding"]["shape"] == [104, 16]
    assert codes["HVA801"].message == (
        "adapter_model.safetensors base_model.model.model.embed_tokens.weight has 106 rows, the base has 104: resize "
        "the base to 106 rows (base.resize_token_embeddings(106)) before PeftModel.from_pretrained, which otherwise "
        "fails with a size mismatch")


def test_pad_to_multiple_of_resize_is_not_reproduced_by_len_tokenizer(base, tmp_path):
    folder = adapter(base, tmp_path / "a", tokens=["<tool>", "</tool>"], resize=106, pad_to_multiple_of=8)
    assert peft_load_error(base, folder, auto=True) == "RuntimeError"  # resized to len(tokenizer) = 106
    assert peft_load_error(base, folder, resize_to=106) == "RuntimeError"
    assert peft_load_error(base, folder, resize_to=112, ids=[1, 104, 105, 2]) is None
    codes = adapter_codes(folder)
    assert set(codes) == {"HVA801", "HVA802"}
    assert "has 112 rows but the adapter's tokenizer has 106 tokens" in codes["HVA802"].message
    assert "resize the base to 112 rows" in codes["HVA801"].message


def test_tokens_added_without_rows_saved(base, tmp_path):
    folder = adapter(base, tmp_path / "a", tokens=["<tool>", "</tool>"])  # no resize: peft saves no rows
    assert peft_load_error(base, folder, ids=[1, 104, 2]) == "IndexError"
    assert peft_load_error(base, folder, auto=True, ids=[1, 104, 2]) is None  # loads, on made-up rows
    codes = adapter_codes(folder)
    assert set(codes) == {"HVA803"} and codes["HVA803"].severity.value == "error"
    assert "'<tool>' (104), '</tool>' (105)" in codes["HVA803"].message


def test_trainable_token_indices(base, tmp_path):
    folder = adapter(base, tmp_path / "a", tokens=["<tool>", "</tool>"], resize=106, trainable_token_indices=[104, 105])
    assert peft_load_error(base, folder) == "IndexError"
    assert peft_load_error(base, folder, resize_to=106, ids=[1, 104, 2]) is None
    assert set(adapter_codes(folder)) == {"HVA801"}
    config = json.loads((folder / "adapter_config.json").read_text())
    config["trainable_token_indices"] = [104, 130]
    (folder / "adapter_config.json").write_text(json.dumps(config))
    assert peft_load_error(base, folder, resize_to=106) is not None
    codes = adapter_codes(folder)
    assert "HVA805" in codes and "[130]" in codes["HVA805"].message


def test_tokenizer_beyond_saved_rows(base, tmp_path):
    from transformers import AutoTokenizer

    folder = adapter(base, tmp_path / "a", tokens=["<tool>", "</tool>"], resize=106)
    tok = AutoTokenizer.from_pretrained(folder)
    tok.add_tokens(["<late>"])  # added after training: id 106
    tok.save_pretrained(folder)
    assert peft_load_error(base, folder, resize_to=106, ids=[1, 106, 2]) == "IndexError"
    codes = adapter_codes(folder)
    assert "HVA804" in codes and "'<late>' (106)" in codes["HVA804"].message


def test_cli_base_option_and_fix_refusal(base, tmp_path, run_cli):
    folder = adapter(base, tmp_path / "a", tokens=["<tool>", "</tool>"])
    config = json.loads((folder / "adapter_config.json").read_text())
    config["base_model_name_or_path"] = "/nonexistent/base"
    (folder / "adapter_config.json").write_text(json.dumps(config))
    code, _out, err = run_cli("check", folder)
    assert code == 2 and "adapter_config.json" in err and "pass --base DIR" in err
    code, out, _err = run_cli("check", folder, "--base", base)
    assert code == 1 and "HVA803" in out
    code, out, _err = run_cli("check", folder, "--base", base, "--fix", "--output", tmp_path / "out")
    assert code == 1 and "NOT FIXED (1)" in out and "no trained rows exist" in out
    assert not (tmp_path / "out").exists()


def test_hub_base_is_audited_through_the_hub_source(base, tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    from hub_server import HubServer, Repo

    folder = adapter(base, tmp_path / "a", tokens=["<tool>", "</tool>"], resize=106)
    config = json.loads((folder / "adapter_config.json").read_text())
    config["base_model_name_or_path"] = "org/base"
    (folder / "adapter_config.json").write_text(json.dumps(config))
    with HubServer({"org/base": Repo.from_folder(base)}) as server:
        env = {**os.environ, "HF_ENDPOINT": server.url, "HF_HOME": str(tmp_path / "hf-home"), "HF_HUB_OFFLINE": "0",
               "PYTHONPATH": str(Path(__file__).resolve().parents[2]), "HF_HUB_DISABLE_TELEMETRY": "1"}
        proc = subprocess.run([sys.executable, "-m", "hf_vocab_audit", "check", str(folder), "--format", "json"],
                              env=env, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr  # HVA801 is a warning
    report = json.loads(proc.stdout)
    assert [f["code"] for f in report["findings"] if f["code"].startswith("HVA8")] == ["HVA801"]
    assert report["facts"]["input_embedding"]["shape"][0] == 104


def test_adapter_with_its_own_config_json_is_still_an_adapter(base, tmp_path):
    import shutil

    folder = adapter(base, tmp_path / "a", tokens=["<tool>", "</tool>"])
    shutil.copy(base / "config.json", folder / "config.json")  # some trainers save the base config too
    config = json.loads((folder / "adapter_config.json").read_text())
    assert config["base_model_name_or_path"] == str(base)
    assert set(adapter_codes(folder)) == {"HVA803"}


def test_base_findings_point_at_the_base_files(tmp_path, run_cli):
    from builders import edit_json

    base = checkpoint(tmp_path / "base", "llama", 104)
    folder = adapter(base, tmp_path / "a", save_tokenizer=False)
    edit_json(base / "config.json", vocab_size=100)  # a base finding: HVA103 in the base's config.json
    (f,) = [f for f in audit(folder).findings if f.code == "HVA103"]
    assert f.location.file == "../base/config.json"
    code, out, _err = run_cli("check", folder, "--format", "github")
    assert code == 1 and f"file={tmp_path}/base/config.json,line=" in out.replace("/a/../", "/"), out


def test_adapter_bin_is_read_with_weights_only(base, tmp_path):
    import torch
    from safetensors.torch import load_file

    folder = adapter(base, tmp_path / "a", tokens=["<tool>"], resize=105)
    state = load_file(folder / "adapter_model.safetensors")
    (folder / "adapter_model.safetensors").unlink()
    torch.save(state, folder / "adapter_model.bin")
    assert peft_load_error(base, folder, resize_to=105, ids=[1, 104, 2]) is None
    assert set(adapter_codes(folder)) == {"HVA801"}


class Payload:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        import os

        return (os.system, (f"touch {self.marker}",))


def test_adapter_pickle_that_runs_code_is_refused(base, tmp_path):
    import torch

    folder = adapter(base, tmp_path / "a", save_tokenizer=False)
    (folder / "adapter_model.safetensors").unlink()
    marker = tmp_path / "pwned"
    torch.save({"x": Payload(marker)}, folder / "adapter_model.bin")
    report = audit(folder)
    (f,) = [f for f in report.findings if f.code == "HVA001"]
    assert f.location.file == "adapter_model.bin" and "weights_only" in f.message
    assert not marker.exists()
