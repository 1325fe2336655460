"""audit(model=..., tokenizer=...): live objects give the findings `check` gives on the saved pair."""

from __future__ import annotations

import json
from typing import Any

import pytest
import torch
from builders import CHATML, checkpoint, edit_json, new_model, new_tokenizer
from memory_cases import CASES, FILE_ONLY, Case, comparable, comparable_findings, loaded

from hf_vocab_audit import AuditError, audit, facts_from_memory
from hf_vocab_audit.facts.weight_formats.registry import load_tensors
from hf_vocab_audit.rules import all_rules


def save_pair(model: Any, tok: Any, folder) -> None:
    model.save_pretrained(folder)
    tok.save_pretrained(folder)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_in_memory_audit_equals_the_saved_folder(case: Case, tmp_path):
    model, tok = case.build()
    memory = audit(model=model, tokenizer=tok)
    save_pair(model, tok, tmp_path)
    folder = audit(tmp_path)
    assert comparable(memory) == comparable(folder)
    live, saved = facts_from_memory(model, tok).tensors, load_tensors(tmp_path)
    assert live is not None and saved is not None
    assert {n: (t.shape, t.dtype) for n, t in live.tensors.items()} == {
        n: (t.shape, t.dtype) for n, t in saved.tensors.items()}  # every name as save_pretrained writes it
    fired = {f.code for f in memory.findings}
    assert set(case.fires) <= fired, f"{case.name} should fire {case.fires}, found {sorted(fired)}"
    assert not set(case.quiet) & fired, f"{case.name} should keep {case.quiet} quiet, found {sorted(fired)}"
    assert memory.target == f"<in-memory {type(model).__name__}>"
    assert memory.exit_code() == folder.exit_code()


@pytest.mark.parametrize("fmt", ["json", "sarif", "text", "markdown", "html", "junit", "github"])
def test_in_memory_reports_render_and_follow_the_schema(fmt):
    from test_reports import validate

    from hf_vocab_audit.formats import render

    model, tok = new_model("llama", 104), new_tokenizer(104, added_special=["<|im_start|>"], chat_template=CHATML)
    report = audit(model=model, tokenizer=tok)
    text = render(report, fmt)
    assert "HVA101" in text and "model.embed_tokens.weight" in text
    if fmt == "json":
        validate(json.loads(text))
    if fmt == "sarif":  # objects in memory are no artifact a code-scanning upload could point at
        uris = [loc["physicalLocation"]["artifactLocation"]["uri"] for run in json.loads(text)["runs"]
                for result in run["results"] for loc in result.get("locations", [])]
        assert not any(uri.startswith("<") for uri in uris)
    if fmt == "github":
        assert "file=<" not in text


def test_every_static_rule_has_a_firing_and_a_quiet_live_case():
    static = {r.code for r in all_rules() if r.scope == "static"}
    fires = {code for case in CASES for code in case.fires}
    quiet = {code for case in CASES for code in case.quiet} | set(FILE_ONLY)  # quiet in every case
    assert static - set(FILE_ONLY) <= fires, sorted(static - set(FILE_ONLY) - fires)
    assert static <= quiet, sorted(static - quiet)
    assert set(FILE_ONLY) <= static


def test_conflicting_added_tokens_are_resolved_by_transformers_on_load(tmp_path):
    # HVA207 is a disagreement between files: the loaded tokenizer has one answer, and so has its save.
    from transformers import AutoTokenizer

    checkpoint(tmp_path / "files", "llama", 110, tokenizer_vocab=104, added_special=["<x>"])
    edit_json(tmp_path / "files" / "tokenizer_config.json",
              added_tokens_decoder={"107": {"content": "<x>", "special": True}})
    assert "HVA207" in {f.code for f in audit(tmp_path / "files").findings}
    tok = AutoTokenizer.from_pretrained(tmp_path / "files")
    memory = audit(tmp_path / "files", tokenizer=tok)  # a folder's model with a live tokenizer
    tok.save_pretrained(tmp_path / "saved")
    assert comparable(memory) == comparable(audit(tmp_path / "files", tokenizer=tmp_path / "saved"))
    assert "HVA207" not in {f.code for f in memory.findings}


def test_the_real_minilm_in_memory_equals_its_saved_folder(minilm_dir, tmp_path):
    model, tok = loaded(minilm_dir)
    memory = audit(model=model, tokenizer=tok)
    save_pair(model, tok, tmp_path)
    assert comparable(memory) == comparable(audit(tmp_path))
    assert comparable(memory)["facts"] == comparable(audit(minilm_dir))["facts"]
    assert memory.facts["input_embedding"] == {"name": "embeddings.word_embeddings.weight", "shape": [30522, 384],
                                               "dtype": "F32", "file": "<model>"}


def test_notebook_add_special_tokens_gets_the_findings_of_check(tmp_path, run_cli):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    base = checkpoint(tmp_path / "base", "llama", 104)
    model = AutoModelForCausalLM.from_pretrained(base)
    tok = AutoTokenizer.from_pretrained(base)
    assert audit(model=model, tokenizer=tok).findings == ()
    tok.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>"]})
    tok.chat_template = CHATML
    memory = audit(model=model, tokenizer=tok)
    save_pair(model, tok, tmp_path / "saved")
    code, out, _err = run_cli("check", tmp_path / "saved", "--format", "json")
    from_check = json.loads(out)
    assert code == memory.exit_code() == 1
    from hf_vocab_audit.core.findings import Finding

    assert comparable(memory)["findings"] == comparable_findings([Finding.from_dict(f) for f in from_check["findings"]])
    assert [f.code for f in memory.findings] == ["HVA101", "HVA102", "HVA206", "HVA206"]


def test_the_audit_leaves_the_live_tokenizer_as_it_was():
    model, tok = new_model("bert", 104), new_tokenizer(104, style="bert", cls="BertTokenizer", model_max_length=64)
    tok.backend_tokenizer.enable_truncation(max_length=5)
    tok.backend_tokenizer.enable_padding(length=7)
    tok.pad_token = "[NEWPAD]"  # the audit adds it, as loading the saved tokenizer would: to its copy
    before = tok.backend_tokenizer.to_str()
    assert [f.code for f in audit(model=model, tokenizer=tok).findings][:1] == ["HVA101"]
    assert tok.backend_tokenizer.to_str() == before and len(tok) == 104
    assert tok.backend_tokenizer.truncation["max_length"] == 5 and tok.backend_tokenizer.padding["length"] == 7


def test_zero3_partitioned_parameters_are_read_from_ds_shape():
    # Under DeepSpeed ZeRO-3 each rank holds an empty placeholder; the full shape is param.ds_shape.
    model, tok = new_model("llama", 104), new_tokenizer(104, added_special=["<|im_start|>"])
    whole = audit(model=model, tokenizer=tok)
    for param in model.parameters():
        param.ds_shape = param.shape
        param.data = torch.empty(0, dtype=param.dtype)
    partitioned = audit(model=model, tokenizer=tok)
    assert comparable(partitioned) == comparable(whole)
    assert partitioned.facts["input_embedding"]["shape"] == [104, 16]
    assert [f.code for f in partitioned.findings] == ["HVA101", "HVA102"]


def test_wrapped_models_name_the_tensors_of_the_checkpoint():
    model, tok = new_model("llama", 104), new_tokenizer(104, added=["extra"])
    report = audit(model=torch.compile(model), tokenizer=tok)
    assert report.target == "<in-memory LlamaForCausalLM>"
    assert report.findings[0].location.tensor == "model.embed_tokens.weight"


def test_facts_from_memory_for_reuse():
    model, tok = new_model("gpt2", 100), new_tokenizer(100, added=["extra"])
    facts = facts_from_memory(model, tok)
    assert facts.input_rows == 100 and facts.tokenizer is not None and facts.tokenizer.max_id == 100
    assert facts.embeddings is not None and facts.embeddings.tied and facts.embeddings.output is None
    assert facts.generation is not None and facts.tensors is not None and facts.tensors.format == "memory"


def test_live_model_with_a_tokenizer_folder_and_without_a_tokenizer(tmp_path):
    model = new_model("llama", 104)
    new_tokenizer(106).save_pretrained(tmp_path)
    (f,) = audit(model=model, tokenizer=tmp_path).findings[:1]
    assert f.code == "HVA101" and "2 id(s) >= the 104 rows" in f.message
    alone = audit(model=model)
    assert alone.findings == ()
    assert any("no tokenizer was passed" in s.reason for s in alone.skipped if s.what.startswith("HVA101"))


def test_weights_analysis_is_skipped_for_a_live_model():
    model, tok = new_model("llama", 104), new_tokenizer(104)
    report = audit(model=model, tokenizer=tok, weights=True)
    assert {s.what.split()[0] for s in report.skipped} >= {"HVA601", "HVA602", "HVA603"}
    assert report.weights is None


def test_bad_arguments_say_what_to_pass(tmp_path):
    model = new_model("llama", 104)
    with pytest.raises(TypeError, match="not both"):
        audit(tmp_path, model=model)
    with pytest.raises(TypeError, match="audit\\(model="):
        audit(model)  # type: ignore[arg-type]  # the mistake under test
    with pytest.raises(TypeError, match="live PreTrainedModel"):
        audit(model=str(tmp_path))
    with pytest.raises(TypeError, match="needs a model folder"):
        audit()
    with pytest.raises(AuditError, match="is not a transformers PreTrainedModel"):
        audit(model=object())
    with pytest.raises(AuditError, match="no `tokenizers` backend"):
        audit(model=model, tokenizer=object())


def test_a_bare_tokenizers_object_is_audited_as_its_ids():
    model, tok = new_model("llama", 104), new_tokenizer(106)
    bare = audit(model=model, tokenizer=tok.backend_tokenizer)
    assert [f.code for f in bare.findings] == ["HVA101", "HVA102", "HVA203"]  # no roles: no pad token either


def test_many_extra_special_tokens_on_a_live_tokenizer_audit_in_linear_time():
    """Extra special tokens the backend lacks are added in one batch and deduplicated in linear time:
    adding them one call at a time took 1.1 s for 2k and 125 s for 20k (quadratic). 10x the tokens
    must cost well under 100x the time; the best of three runs each keeps a loaded machine's noise out."""
    import time

    model = new_model("llama", 104)

    def best_time(n: int) -> float:
        tok = new_tokenizer(104)
        tok.extra_special_tokens = [f"<extra_{i}>" for i in range(n)] + ["<extra_0>"]  # one duplicate
        times = []
        for _ in range(3):
            start = time.perf_counter()
            audit(model=model, tokenizer=tok)
            times.append(time.perf_counter() - start)
        extras = facts_from_memory(model, tok).tokenizer
        assert extras is not None and len(extras.extra_special_tokens) == n  # deduplicated
        assert all(i is not None for _, i in extras.extra_special_tokens)  # each added, as loading would
        return min(times)

    small, large = best_time(2_000), best_time(20_000)
    assert large / small < 30, f"20k extra special tokens took {large:.2f}s, 2k took {small:.2f}s"
