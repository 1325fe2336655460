"""`check HF_DIR --target gguf` follows the converter's own choice of vocabulary path (per architecture, in each
model class's ``set_vocab``) against what llama.cpp's converter did with the same tiny checkpoints
(``converter_paths`` in tests/data/gguf_verdicts.json, recorded by scripts/gguf_verdicts.py with
llama-cpp-python 0.3.36's convert_hf_to_gguf.py).

What the converter did is read off its GGUF: ``tokenizer.ggml.model`` "gpt2" and a "chkhsh" in its log is the
BPE path (it hashed the pre-tokenizer); "llama" with every score -1000.0 is ``LlamaHfVocab`` (it writes no
scores); "llama" with the SentencePiece scores is ``tokenizer.model``; no GGUF is a stop.
"""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path

import pytest

pytest.importorskip("gguf")
pytest.importorskip("sentencepiece")

from gguf_builders import PATH_ADDED, PATH_GPT2_SETUPS, PATH_SETUPS, gpt2_checkpoint, hf_checkpoint, train_spm  # noqa: E402

from hf_vocab_audit.audit import audit  # noqa: E402
from hf_vocab_audit.facts import gather  # noqa: E402
from hf_vocab_audit.facts.gguf_converter_paths import CONVERTER_CLASSES, VocabStep  # noqa: E402
from hf_vocab_audit.facts.targets import predict  # noqa: E402

VERDICTS = json.loads((Path(__file__).resolve().parent.parent / "data" / "gguf_verdicts.json").read_text("utf-8"))
PATHS = VERDICTS["converter_paths"]
CASES = sorted(PATH_SETUPS) + sorted(PATH_GPT2_SETUPS)


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("paths")
    spm = train_spm(root)
    out = {name: hf_checkpoint(root / name, spm, **kw) for name, kw in PATH_SETUPS.items()}
    return out | {name: gpt2_checkpoint(root / name, **kw) for name, kw in PATH_GPT2_SETUPS.items()}


def taken(verdict: dict) -> str:
    """The path the converter took, read off what it wrote."""
    if not verdict["converted"]:
        return "none"
    if verdict["ggml_model"] == "gpt2":
        assert verdict["chkhsh"], "the BPE path hashes the pre-tokenizer"
        return "bpe"
    assert verdict["ggml_model"] == "llama" and verdict["ggml_pre"] == "default" and verdict["chkhsh"] is None
    return "llama_hf" if verdict["scores_all_minus_1000"] else "sentencepiece"


def codes(report) -> dict[str, list]:
    out: dict[str, list] = {}
    for f in report.findings:
        out.setdefault(f.code, []).append(f)
    return out


def test_every_case_has_a_verdict() -> None:
    assert set(CASES) == set(PATHS)


def test_the_cases_cover_every_path() -> None:
    assert {taken(PATHS[name]) for name in CASES} == {"none", "bpe", "llama_hf", "sentencepiece"}


@pytest.mark.parametrize("name", CASES)
def test_predicted_path_is_the_converters(checkpoints, name: str) -> None:
    t = predict(gather(checkpoints[name]), "gguf")
    assert t.path == taken(PATHS[name]), t.path_why
    if t.path == "bpe":
        assert t.pre_hash == PATHS[name]["chkhsh"]
    else:
        assert t.pre_hash is None  # nothing hashed where the converter hashed nothing


@pytest.mark.parametrize("name", CASES)
def test_target_gguf_predicts_what_the_converter_wrote(checkpoints, name: str) -> None:
    """HVA923 only where the converter hashed; HVA925 <=> it stopped; HVA926 <=> its GGUF has another token
    count than token_embd rows (llama.cpp refuses that: ``tokens_over_rows`` / ``rows_over_tokens`` in the
    recorded cases); on the LlamaHfVocab path no [PAD{i}] (HVA922), no assertion (HVA920), nothing dropped
    (HVA921), and the added tokens at the ids the converter gave them."""
    verdict = PATHS[name]
    found = codes(audit(checkpoints[name], target_kind="gguf"))
    assert "HVA923" not in found  # every case here converts or stops before any hash
    assert ("HVA925" in found) == (not verdict["converted"]), found
    if not verdict["converted"]:
        assert "tokenizer.model" in " ".join(verdict["log"]) and "tokenizer.model" in found["HVA925"][0].message
        return
    rows = verdict["shapes"]["token_embd.weight"][0]
    assert ("HVA926" in found) == (verdict["tokens"] != rows), found
    if "HVA926" in found:
        assert found["HVA926"][0].details["tokens"] == verdict["tokens"]
        assert found["HVA926"][0].details["rows"] == rows
    if taken(verdict) == "llama_hf":
        assert verdict["pad_fillers"] == 0 and not {"HVA920", "HVA921", "HVA922"} & set(found)
        t = predict(gather(checkpoints[name]), "gguf")
        assert t.llama_hf is not None
        at = {text: t.llama_hf.base + k for k, (_, text) in enumerate(t.llama_hf.appended)}
        assert {x: i for x, i in at.items() if x in PATH_ADDED} == verdict["added_ids"]  # the ids it recorded
        assert [x for x in at if x not in PATH_ADDED] == [x for x in verdict.get("added_types", {}) if x not in PATH_ADDED]


def test_llama_cpp_refuses_a_token_count_unlike_the_rows() -> None:
    """What HVA926 says llama.cpp does, recorded with llama.cpp itself on the GGUF cases."""
    for case in ("tokens_over_rows", "rows_over_tokens"):
        verdict = VERDICTS["cases"][case]
        assert verdict["vocab_only"]["loads"] and not verdict["full"]["loads"]
        assert "check_tensor_dims" in " ".join(verdict["log"])


@pytest.mark.parametrize("name", [n for n in CASES if "llama_cpp" in PATHS[n]])
def test_converted_llama_hf_gguf_loads_where_predicted(name: str) -> None:
    """Where the verdict was recorded with llama.cpp installed: the GGUF it loads and runs is the one no
    HVA925/926 is predicted for."""
    verdict = PATHS[name]
    expect_loads = verdict["tokens"] == verdict["shapes"]["token_embd.weight"][0]
    assert verdict["llama_cpp"]["full"]["loads"] == expect_loads
    if expect_loads:
        assert verdict["llama_cpp"]["full"]["forward"]


def test_architecture_outside_the_table_keeps_the_old_guess(tmp_path: Path) -> None:
    spm = train_spm(tmp_path)
    folder = hf_checkpoint(tmp_path / "m", spm, keep_model=False)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(config | {"architectures": ["NoSuchForCausalLM"]}))
    t = predict(gather(folder), "gguf")
    assert t.path == "bpe" and t.converter_class is None


@pytest.mark.parametrize("arch", ["VLlama3ForCausalLM", "SmolLM3ForCausalLM", "LlavaForConditionalGeneration"])
def test_llama_family_architectures_read_tokenizer_json_through_llama_hf(tmp_path: Path, arch: str) -> None:
    """Architectures registered on LlamaModel (or a subclass keeping its set_vocab) take its readers: a
    tokenizer.json-only folder goes through LlamaHfVocab and is never hashed. Measured: the converter wrote
    this folder under VLlama3ForCausalLM as a "llama" vocabulary (64 tokens, scores -1000, no chkhsh:
    ``vllama3_tokenizer_json_only_healthy``) where the audit, guessing BPE, failed it with HVA923."""
    spm = train_spm(tmp_path)
    folder = hf_checkpoint(tmp_path / "m", spm, keep_model=False)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(config | {"architectures": [arch]}))
    t = predict(gather(folder), "gguf")
    assert (t.path, t.converter_class) == ("llama_hf", "LlamaModel"), t.path_why
    assert not {"HVA923", "HVA925", "HVA926"} & set(codes(audit(folder, target_kind="gguf")))


def test_phi3_reads_the_added_tokens_of_tokenizer_json(checkpoints) -> None:
    """Phi3MiniModel's own SentencePiece reader (conversion/phi.py) also writes tokenizer.json's added_tokens,
    unlike ``_create_vocab_sentencepiece``: the converter wrote ``<|im_end|>`` (added special by transformers 5,
    so only in tokenizer.json) at 64 typed CONTROL, no [PAD64], and llama.cpp loaded it; the audit had failed
    the folder (HVA921 "will become [PAD64]")."""
    name = "phi_mini_with_tokenizer_model_im_end_special_added_resized_to_65_rows"
    verdict = PATHS[name]
    assert verdict["pad_fillers"] == 0 and verdict["added_types"] == {"<|im_end|>": 3}
    assert verdict["last_tokens"][-1] == "<|im_end|>" and verdict["llama_cpp"]["full"]["loads"]
    assert "added_tokens_decoder" not in json.loads((checkpoints[name] / "tokenizer_config.json").read_text())
    t = predict(gather(checkpoints[name]), "gguf")
    assert (t.path, t.converter_class) == ("sentencepiece", "Phi3MiniModel")
    assert not {"HVA921", "HVA922", "HVA924"} & set(codes(audit(checkpoints[name], target_kind="gguf")))


def test_a_large_tokenizer_json_is_read_for_llama_hf(tmp_path: Path) -> None:
    """A SentencePiece-converted tokenizer.json of a large vocabulary (Gemma's 256k pieces: over 16 MiB) is read
    to decide the LlamaHfVocab path, as the converter reads it whole: a config file's 16 MiB bound made it
    "not a JSON object", guessed BPE, hashed and failed (HVA923). The tokenizer the audit loaded is read instead
    of a second parse of the file."""
    from hf_vocab_audit.facts.gguf_converter_paths import choose_path, llama_hf_refusal

    spm = train_spm(tmp_path)
    folder = hf_checkpoint(tmp_path / "m", spm, keep_model=False)
    with (folder / "tokenizer.json").open("a", encoding="utf-8") as f:
        f.write(" " * (17 * 1024 * 1024))  # whitespace after the object: json.load takes it, as the converter does
    assert llama_hf_refusal(folder) is not None  # the file alone is over a config file's bound: not parsed again
    facts = gather(folder)  # the tokenizer the audit loaded decides instead
    assert facts.tokenizer is not None and llama_hf_refusal(folder, facts.tokenizer.backend) is None
    assert choose_path(folder, ("LlamaForCausalLM",), backend=facts.tokenizer.backend).path == "llama_hf"
    t = predict(facts, "gguf")
    assert t.path == "llama_hf" and t.pre_hash is None


@pytest.mark.slow
def test_table_is_the_converters_source() -> None:
    """Where an unpacked llama-cpp-python sdist is named by HVA_LLAMA_CPP_SDIST: every architecture of the
    table is registered (``@ModelBase.register``) by a class whose ``set_vocab`` (its own or inherited) names
    the readers of the table's steps."""
    sdist = os.environ.get("HVA_LLAMA_CPP_SDIST")
    if not sdist:
        pytest.skip("HVA_LLAMA_CPP_SDIST names no unpacked llama-cpp-python sdist")
    classes: dict[str, tuple[list[str], str | None, list[str]]] = {}
    for path in (Path(sdist) / "vendor" / "llama.cpp" / "conversion").glob("*.py"):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if not isinstance(node, ast.ClassDef):
                continue
            archs = [a.value for d in node.decorator_list if isinstance(d, ast.Call)
                     and getattr(d.func, "attr", "") == "register" for a in d.args if isinstance(a, ast.Constant)]
            body = next((ast.unparse(b) for b in node.body if isinstance(b, ast.FunctionDef) and b.name == "set_vocab"),
                        None)
            classes[node.name] = (archs, body, [ast.unparse(b) for b in node.bases])

    def set_vocab(name: str) -> str | None:
        archs, body, bases = classes.get(name, ([], None, []))
        if body is not None and "super().set_vocab()" not in body:
            return body
        return next((found for b in bases if (found := set_vocab(b)) is not None), body)

    reader = {VocabStep.SENTENCEPIECE: ("_set_vocab_sentencepiece", "'tokenizer.model'"),  # Phi3 reads it inline
              VocabStep.LLAMA_HF: ("_set_vocab_llama_hf",), VocabStep.BPE: ("_set_vocab_gpt2",),
              VocabStep.BPE_IF_GPT2_CLASS: ("'GPT2Tokenizer'",)}

    def first(body: str, names: tuple[str, ...]) -> int:
        return min((i for i in (body.find(n) for n in names) if i >= 0), default=-1)

    def mmproj(name: str) -> bool:  # a vision/audio projector class: registered apart from the text classes
        return name == "MmprojModel" or any(mmproj(b) for b in classes.get(name, ([], None, []))[2])

    text_owner = {arch: name for name, (archs, _, _) in classes.items() if not mmproj(name) for arch in archs}
    llama_body = set_vocab("LlamaModel")
    # every architecture that takes LlamaModel's readers is in the table: one missing would be guessed BPE and
    # hashed (a false HVA923) where the converter reads tokenizer.json through LlamaHfVocab
    assert {a for a, o in text_owner.items() if set_vocab(o) == llama_body} <= set(CONVERTER_CLASSES)
    for arch, cls in CONVERTER_CLASSES.items():
        owner = text_owner[arch]
        body = set_vocab(owner)
        if cls.name.startswith("TextModel"):
            assert body is None or body.strip().endswith("self._set_vocab_gpt2()"), (arch, owner)
            continue
        assert body is not None, (arch, owner)
        at = [first(body, reader[s]) for s in cls.steps]
        assert all(i >= 0 for i in at) and at == sorted(at), (arch, owner, cls.steps)


@pytest.mark.parametrize("name", [n for n in CASES if "im_end" in n])
def test_control_looking_token_as_the_converter_typed_it(checkpoints, name: str) -> None:
    """An added, non-special ``<|im_end|>``: LlamaHfVocab types added tokens by ``all_special_tokens`` alone
    (no ``does_token_look_special``), so it writes USER_DEFINED and HVA924 warns; the SentencePiece path
    never reads a token listed only in tokenizer.json (HVA921), so there is no type to warn about."""
    written = PATHS[name]["added_types"]
    found = codes(audit(checkpoints[name], target_kind="gguf"))
    warned = any(f.details["token"] == "<|im_end|>" for f in found.get("HVA924", []))
    if "<|im_end|>" in written:
        assert warned == (written["<|im_end|>"] != 3), (written, found.get("HVA924"))  # 3: CONTROL
    else:
        assert not warned and any("<|im_end|>" in f.message for f in found.get("HVA921", []))
