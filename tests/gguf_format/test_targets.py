"""`check model.gguf --source HF_DIR` and `check HF_DIR --target gguf|vllm` against what llama.cpp's converter
did with the same tiny checkpoints (``converter`` in tests/data/gguf_verdicts.json, recorded by
scripts/gguf_verdicts.py with llama-cpp-python 0.3.36's convert_hf_to_gguf.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("gguf")
pytest.importorskip("sentencepiece")

from gguf_builders import N_EMBD, Vocab, bpe_checkpoint, hf_checkpoint, train_spm, write_gguf  # noqa: E402

from hf_vocab_audit.audit import audit, audit_gguf  # noqa: E402

VERDICTS = json.loads((Path(__file__).resolve().parent.parent / "data" / "gguf_verdicts.json").read_text("utf-8"))
CONVERTER = VERDICTS["converter"]
ADDED = ["<t1>", "<t2>", "<t3>"]
SETUPS = {"healthy": {}, "added_3_tokens_without_resize": {"added": ADDED}, "resized_to_72_rows": {"resize": 72},
          "added_3_tokens_resized_to_72_rows": {"added": ADDED, "resize": 72}}


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("hf")
    spm = train_spm(root)
    return {name: hf_checkpoint(root / name, spm, **kw) for name, kw in SETUPS.items()} | {"spm": spm}


def converted_like_llama_cpp(path: Path, spm: Path, name: str) -> Path:
    """The GGUF llama.cpp's converter wrote for ``name``: the SentencePiece pieces, then [PAD{i}] up to the
    rows (the recorded verdict's token count and last tokens are checked, so this is what it wrote)."""
    import sentencepiece

    sp = sentencepiece.SentencePieceProcessor(model_file=str(spm))
    rows = CONVERTER[name]["shapes"]["token_embd.weight"][0]
    tokens = [sp.IdToPiece(i) for i in range(sp.GetPieceSize())] + [f"[PAD{i}]" for i in range(sp.GetPieceSize(), rows)]
    assert len(tokens) == CONVERTER[name]["tokens"] and tokens[-4:] == CONVERTER[name]["last_tokens"]
    types = [2, 3, 3] + [1] * (sp.GetPieceSize() - 3) + [5] * (rows - sp.GetPieceSize())
    vocab = Vocab("llama", "default", tokens, types, [0.0] * rows, None,
                  {"bos_token_id": 1, "eos_token_id": 2, "unknown_token_id": 0})
    return write_gguf(path, vocab=vocab, rows=rows, output_rows=rows)


def codes(report) -> dict[str, list]:
    out: dict[str, list] = {}
    for f in report.findings:
        out.setdefault(f.code, []).append(f)
    return out


@pytest.mark.parametrize("name", sorted(SETUPS))
def test_source_comparison_finds_what_the_converter_lost(tmp_path: Path, checkpoints, name: str) -> None:
    gguf_path = converted_like_llama_cpp(tmp_path / "m.gguf", checkpoints["spm"], name)
    found = codes(audit_gguf(gguf_path, source=checkpoints[name]))
    lost = bool(SETUPS[name].get("added"))  # the converter kept none of the added tokens (verdict: token counts)
    assert ("HVA910" in found) == lost, found
    if lost:
        assert found["HVA910"][0].details["count"] == len(ADDED)
    fillers = CONVERTER[name]["pad_fillers"] - (len(ADDED) if lost and CONVERTER[name]["pad_fillers"] else 0)
    assert ("HVA914" in found) == bool(fillers)
    assert not {"HVA911", "HVA912", "HVA913"} & set(found)


def test_source_special_id_template_and_shape(tmp_path: Path, checkpoints) -> None:
    name = "healthy"
    gguf_path = converted_like_llama_cpp(tmp_path / "m.gguf", checkpoints["spm"], name)
    source = checkpoints[name]
    config = json.loads((source / "tokenizer_config.json").read_text())
    (source.parent / "templ").mkdir()
    import shutil

    other = source.parent / "templ" / "hf"
    shutil.copytree(source, other)
    (other / "tokenizer_config.json").write_text(json.dumps(config | {"chat_template": "{{ x }}", "eos_token": "<unk>"}))
    found = codes(audit_gguf(gguf_path, source=other))
    assert found["HVA911"][0].location.key == "tokenizer.ggml.eos_token_id"
    assert "HVA912" in found
    small = write_gguf(tmp_path / "small.gguf", vocab=Vocab("llama", "default", ["<unk>", "<s>", "</s>"] * 1,
                                                            [2, 3, 3], None, None), rows=3, output_rows=3)
    found = codes(audit_gguf(small, source=source))
    assert found["HVA913"][0].details["gguf"] == [3, N_EMBD]


@pytest.mark.parametrize("name", sorted(SETUPS))
def test_target_gguf_predicts_the_converter(checkpoints, name: str) -> None:
    verdict = CONVERTER[name]
    assert verdict["converted"]
    found = codes(audit(checkpoints[name], target_kind="gguf"))
    hf_len = 64 + len(SETUPS[name].get("added", []))
    dropped = hf_len > verdict["tokens"] or (SETUPS[name].get("added") and verdict["pad_fillers"] > 72 - hf_len)
    assert ("HVA921" in found) == bool(dropped), found
    assert ("HVA922" in found) == bool(verdict["pad_fillers"])
    if "HVA922" in found:
        assert found["HVA922"][0].details["count"] == verdict["pad_fillers"]
    assert "HVA923" not in found and "HVA920" not in found


def test_target_gguf_unknown_pre_tokenizer(tmp_path: Path) -> None:
    verdict = CONVERTER["bpe_trained_here"]
    assert not verdict["converted"] and any("BPE pre-tokenizer was not recognized" in line for line in verdict["log"])
    found = codes(audit(bpe_checkpoint(tmp_path / "bpe"), target_kind="gguf"))
    assert "BPE pre-tokenizer was not recognized" in found["HVA923"][0].message


def test_known_pre_tokenizer_hash_is_recognised(tmp_path: Path) -> None:
    """The hash is computed as the converter does: a tokenizer whose hash is in the table gets its name."""
    import hashlib

    from hf_vocab_audit.facts import gather
    from hf_vocab_audit.facts.llama_cpp_tables import CHKTXT
    from hf_vocab_audit.facts.targets import predict

    facts = gather(bpe_checkpoint(tmp_path / "bpe"))
    digest = hashlib.sha256(str(facts.tokenizer.backend.encode(CHKTXT).ids).encode()).hexdigest()
    assert predict(facts, "gguf").pre_hash == digest and predict(facts, "gguf").pre_name is None


def test_target_vllm_lists_the_undecodable_ids(checkpoints) -> None:
    report = audit(checkpoints["resized_to_72_rows"], target_kind="vllm")
    (hit,) = codes(report)["HVA950"]
    assert report.to_dict()["vllm"]["suppress_token_ids"] == list(range(64, 72))
    # vLLM (up to 0.10.1.1) refuses ids above max(largest id 63, tokenizer.vocab_size 64): 65 is the first
    assert "Token id 65 is out of vocabulary" in hit.message and hit.details["vllm_max_token_id"] == 64
    assert hit.details["refused_as_prompt_up_to_0_10_1"] == 7
    healthy = audit(checkpoints["healthy"], target_kind="vllm")
    assert "HVA950" not in codes(healthy) and healthy.to_dict()["vllm"]["suppress_token_ids"] == []


def test_target_vllm_one_padding_row_passes_vllms_check(checkpoints, tmp_path: Path) -> None:
    """65 rows over 64 tokens: id 64 cannot be decoded, but vLLM's max_token_id is max(63, vocab_size 64) = 64,
    so even vLLM 0.10.1.1 takes it back as a prompt: the warning names the id without the engine's error."""
    folder = hf_checkpoint(tmp_path / "m65", checkpoints["spm"], resize=65)
    report = audit(folder, target_kind="vllm")
    (hit,) = codes(report)["HVA950"]
    assert report.to_dict()["vllm"]["suppress_token_ids"] == [64]
    assert hit.details["refused_as_prompt_up_to_0_10_1"] == 0 and "is out of vocabulary" not in hit.message


def test_cli_target_and_source(checkpoints, tmp_path: Path, run_cli) -> None:
    code, out, _ = run_cli("check", checkpoints["resized_to_72_rows"], "--target", "vllm", "--format", "json")
    assert json.loads(out)["vllm"]["suppress_token_ids"] == list(range(64, 72))
    code, _out, err = run_cli("check", checkpoints["healthy"], "--target", "tflite")
    assert code == 2 and "--target must be one of gguf, vllm" in err
    code, _out, err = run_cli("check", checkpoints["healthy"], "--source", checkpoints["healthy"])
    assert code == 2 and "--source HF_DIR applies to a GGUF target" in err
    gguf_path = converted_like_llama_cpp(tmp_path / "m.gguf", checkpoints["spm"], "added_3_tokens_without_resize")
    code, out, _ = run_cli("check", gguf_path, "--source", checkpoints["added_3_tokens_without_resize"])
    assert code == 1 and "HVA910" in out


def test_target_vllm_refused_adapters(tmp_path: Path) -> None:
    """HVA951: an adapter that saved the resized embeddings (tokens added, model resized) is refused; a plain
    LoRA on q/v is not."""
    pytest.importorskip("peft")
    from builders import checkpoint
    from family_builders import adapter

    base = checkpoint(tmp_path / "base")
    plain = adapter(base, tmp_path / "plain")
    assert "HVA951" not in codes(audit(plain, base=base, target_kind="vllm"))
    resized = adapter(base, tmp_path / "resized", tokens=["<x1>", "<x2>"], resize=106)
    (hit,) = codes(audit(resized, base=base, target_kind="vllm"))["HVA951"]
    # vLLM parses every saved name (sorted, as safetensors lists them); both whole matrices are refused
    assert hit.details["unsupported_tensors"] == ["base_model.model.lm_head.weight",
                                                  "base_model.model.model.embed_tokens.weight"]
    assert '"base_model.model.lm_head.weight is unsupported LoRA weight"' in hit.message and "merge_and_unload" in hit.message
    assert hit.location.tensor == "base_model.model.lm_head.weight"
    saved = adapter(base, tmp_path / "saved", modules_to_save=["lm_head"])
    (hit,) = codes(audit(saved, base=base, target_kind="vllm"))["HVA951"]
    assert "vLLM only supports modules_to_save being None." in hit.message
    # trainable_token_indices: peft saves a trainable_tokens_delta, a name vLLM's parser does not take
    tokens = adapter(base, tmp_path / "tokens", trainable_token_indices=[5, 6])
    (hit,) = codes(audit(tokens, base=base, target_kind="vllm"))["HVA951"]
    assert any(n.endswith("trainable_tokens_delta") for n in hit.details["unsupported_tensors"])
    assert "is unsupported LoRA weight" in hit.message


def test_target_vllm_with_weights_adds_untrained_reserved_rows(tmp_path: Path) -> None:
    """--weights: a reserved special token whose rows were never trained (zero) joins the suppress list."""
    from weights_builders import llama_with_rows

    folder = llama_with_rows(tmp_path / "m", added=["<|reserved_0|>", "<|reserved_1|>"], zero=["<|reserved_1|>"],
                             chat_template=None)
    report = audit(folder, weights=True, target_kind="vllm")
    section = report.to_dict()["vllm"]
    # <|reserved_1|> (101) zeroed; <pad> (3) is nn.Embedding's padding_idx row, zero from the start
    assert section["untrained_reserved_ids"] == [3, 101]
    assert {3, 101} <= set(section["suppress_token_ids"]) and 100 not in section["suppress_token_ids"]
    assert audit(folder, target_kind="vllm").to_dict()["vllm"] == {"suppress_token_ids": []}


def test_cli_writes_the_suppress_ids_file(checkpoints, tmp_path: Path, run_cli) -> None:
    out = tmp_path / "ids.json"
    code, _out, _err = run_cli("check", checkpoints["resized_to_72_rows"], "--target", "vllm", "--suppress-ids-file", out)
    assert code == 0 and json.loads(out.read_text()) == list(range(64, 72))
    code, _out, err = run_cli("check", checkpoints["healthy"], "--suppress-ids-file", out)
    assert code == 2 and "--suppress-ids-file needs --target vllm" in err
