"""``hf-vocab-audit repro``: exit codes, the sidecar-vs-checkpoint comparison, untrusted input."""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch
import transformers
from builders import checkpoint

import hf_vocab_audit as hva
from hf_vocab_audit.guard import check_batch, limits_of
from hf_vocab_audit.guard.evidence import write_evidence


@pytest.fixture()
def saved_pad_batch(guard_ckpts, tmp_path):
    """The guard's evidence of a pad token (id 104) added to a 104-row model without a resize."""
    model = transformers.AutoModelForCausalLM.from_pretrained(guard_ckpts["llama"])
    tok = transformers.AutoTokenizer.from_pretrained(guard_ckpts["llama"])
    tok.add_special_tokens({"pad_token": "<newpad>"})
    collate = hva.guard(model, tok, evidence_dir=tmp_path / "ev").wrap(transformers.DataCollatorWithPadding(tok))
    with pytest.raises(hva.BatchIndexError) as caught:
        collate([tok("w1 w2 w3"), tok("w4")])
    return caught.value.evidence


def test_replay_from_the_sidecar_alone(saved_pad_batch, run_cli):
    code, out, _ = run_cli("repro", saved_pad_batch)
    assert code == 1
    assert "checked against the live model (sidecar): 1 problem(s)" in out
    assert "reproduced: IndexError: index out of range in self" in out and "Traceback" in out


def test_weights_replay_matches(saved_pad_batch, guard_ckpts, run_cli):
    code, out, _ = run_cli("repro", saved_pad_batch, guard_ckpts["llama"], "--weights")
    assert code == 1 and "with the weights of" in out and "reproduced: IndexError: index out of range in self" in out


def test_a_limit_that_differs_from_the_checkpoint_is_reported(saved_pad_batch, tmp_path, run_cli):
    fixed = checkpoint(tmp_path / "fixed", "llama", rows=112)  # the checkpoint as later saved: resized
    code, out, _ = run_cli("repro", saved_pad_batch, fixed)
    assert "limit differs: the live model had 104 input-embedding rows, the checkpoint has 112" in out
    assert "every key in range" in out and "GPU-only" in out and code == 0


def test_flash_attention_mask_fault_is_clean_on_cpu(load_model, guard_ckpts, tmp_path, run_cli):
    limits = dataclasses.replace(limits_of(load_model("llama")), attn_implementation="flash_attention_2")
    batch = {"input_ids": torch.tensor([[5, 6, 7]]), "attention_mask": torch.tensor([[1, 2, 1]])}
    path = write_evidence(tmp_path, batch, limits, check_batch(batch, limits), rank=0, worker=None, batch_number=0,
                          config=None)
    code, out, _ = run_cli("repro", path, guard_ckpts["llama"])
    assert code == 0 and "HVA540" in out and "GPU-only cause" in out


@pytest.mark.parametrize("problem", ["missing", "not-safetensors", "weights-without-model", "custom-class",
                                     "no-config", "absurd-rows", "limits-wrong-type", "bad-config-value"])
def test_could_not_run_is_one_line_and_exit_2(problem, saved_pad_batch, guard_ckpts, tmp_path, run_cli):
    args: list = ["repro", saved_pad_batch]
    if problem == "missing":
        args = ["repro", tmp_path / "nope.safetensors"]
    elif problem == "not-safetensors":
        bad = tmp_path / "bad.safetensors"
        bad.write_bytes(b"\x80\x04K\x01.")  # a pickle is not a batch file
        args = ["repro", bad]
    elif problem == "weights-without-model":
        args.append("--weights")
    elif problem == "custom-class":
        side = saved_pad_batch.replace(".safetensors", ".json")
        data = json.loads(open(side).read())
        data["limits"]["model_class"] = "EvilForCausalLM"
        data["config"]["architectures"] = ["EvilForCausalLM"]
        open(side, "w").write(json.dumps(data))
    elif problem == "no-config":
        args.append(tmp_path)
    elif problem == "absurd-rows":  # a hostile sidecar must not make the twin allocate terabytes
        side = saved_pad_batch.replace(".safetensors", ".json")
        data = json.loads(open(side).read())
        data["limits"]["input_rows"] = 10**12
        open(side, "w").write(json.dumps(data))
    elif problem in ("limits-wrong-type", "bad-config-value"):
        side = saved_pad_batch.replace(".safetensors", ".json")
        data = json.loads(open(side).read())
        if problem == "limits-wrong-type":
            data["limits"]["input_rows"] = "104"
        else:
            data["config"]["num_attention_heads"] = "many"
        open(side, "w").write(json.dumps(data))
    code, out, err = run_cli(*args)
    assert code == 2, out
    assert err.startswith("hf-vocab-audit: error: ") and err.count("\n") == 1 and "Traceback" not in err
