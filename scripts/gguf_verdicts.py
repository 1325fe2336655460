#!/usr/bin/env python
"""Record what llama.cpp itself does with each GGUF case of tests/gguf_builders.py, and what its converter
does with tiny HF checkpoints, into tests/data/gguf_verdicts.json (the fast tests replay these verdicts).

    pip download --no-deps --no-binary=:all: llama-cpp-python==0.3.36 -d SRC && tar xzf SRC/*.tar.gz -C SRC
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF" \\
        pip install SRC/llama_cpp_python-0.3.36.tar.gz          # a CPU build, ~15 min on one core
    python scripts/gguf_verdicts.py --sdist SRC/llama_cpp_python-0.3.36 [--out tests/data/gguf_verdicts.json]

Steps: (1) build a tiny Llama checkpoint (SentencePiece tokenizer of 64 pieces, 64 embedding rows) and
convert it with the sdist's own ``convert_hf_to_gguf.py`` (``--outtype f32``); also convert the same
checkpoint after ``add_tokens`` of 3 tokens without a resize, and after a resize to a multiple of 8;
(1b) the BPE path: a tokenizer trained here (its pre-tokenizer hash is unknown: the converter stops there),
and tiny GPT-2 checkpoints whose tokenizer splits the converter's test text as GPT-2 does (so the hash is
"gpt-2" and the converter goes on to its vocabulary): healthy, 3 tokens added without a resize, config.json's
``vocab_size`` edited below the tokenizer, 3 tokens added with a resize to a multiple of 8, and the healthy
tokenizer under a Qwen2 config (``gguf_builders.GPT2_SETUPS``); each converted GGUF is loaded by llama.cpp;
the converter's own hash (its ``--verbose`` "chkhsh") is recorded for each;
(1c) the converter's choice of vocabulary path (``gguf_builders.PATH_SETUPS``, key ``converter_paths``):
Llama-2 style folders with and without ``tokenizer.model`` (tokenizer.json only: LlamaHfVocab), under Llama,
Mistral and Gemma configs, and a GPT-2 style BPE under a Llama config; ``--paths-only`` records these (and
step 4) alone;
(2) for every case, rewrite the converted GGUF with the case's tokenizer edits (``gguf.GGUFWriter``; the
tensors as converted) and load it with ``llama_cpp.Llama`` in a child process, vocabulary only and in
full, tokenizing the case's probe text; (3) extract the BPE pre-tokenizers llama.cpp knows from its
``src/llama-vocab.cpp``; (4) ask llama.cpp's built-in chat-template engine (``llama_chat_apply_template``)
about each test template of ``gguf_builders`` (key ``chat_templates``; ``--templates-only`` records these
alone); (5) llama.cpp's end-of-generation set (``llama_vocab_is_eog``) and its tokens of the text a chat template
writes after an assistant's answer, for the GGUFs and converted folders of ``gguf_builders.EOG_SETUPS``,
``REAL_EOG_TEMPLATES`` and ``EOG_FOLDERS`` (key ``eog``; ``--eog-only`` records these alone). Nothing of
llama.cpp is copied into the project: only these observations, and the text of the model templates it ships
for its own tests (the models' authors', used as test inputs).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

LOG_PATTERNS = ("check_tensor_dims", "wrong shape", "unknown pre-tokenizer", "unknown tokenizer",
                "missing pre-tokenizer", "bad special token", "control-looking token", "Failed to load",
                "ignore token", "out of range", "Padding vocab", "AssertionError", "NotImplementedError",
                "error", "Error:", "GGML_ASSERT", "what():")


def scrub(text: str) -> str:
    """``text`` without the folders of this machine (temporary files, the build folder): file names stay."""
    return re.sub(r"(?:/[^\s/'\"]+)+/", "", text)


def relevant(text: str) -> list[str]:
    """The log lines that say why (deduplicated, in order, trimmed)."""
    out: list[str] = []
    for line in text.splitlines():
        line = scrub(re.sub(r"\s+", " ", line.strip()))[:300]
        if any(p in line for p in LOG_PATTERNS) and line not in out:
            out.append(line)
    return out[:12]


# --- the tiny HF checkpoints: tests/gguf_builders.py (train_spm, hf_checkpoint, bpe_checkpoint) -------------

from gguf_builders import (  # noqa: E402
    GPT2_ADDED,
    GPT2_CHKHSH,
    GPT2_SETUPS,
    GPT2_SUBSET,
    bpe_checkpoint,
    gpt2_checkpoint,
    gpt2_tokenizer,
    hf_checkpoint,
    train_spm,
)

from hf_vocab_audit.facts.llama_cpp_tables import CHKTXT  # noqa: E402


def convert(sdist: Path, model: Path, out: Path, *, verbose: bool = False) -> dict[str, object]:
    """Run the sdist's converter on ``model``; ``verbose``: also record the pre-tokenizer hash it computed
    (its debug log's "chkhsh: ...")."""
    vendor = sdist / "vendor" / "llama.cpp"
    env = {**os.environ, "PYTHONPATH": str(vendor / "gguf-py"), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, str(vendor / "convert_hf_to_gguf.py"), str(model), "--outfile", str(out),
                           "--outtype", "f32", *(["--verbose"] if verbose else [])],
                          capture_output=True, text=True, env=env, timeout=600)
    text = proc.stdout + proc.stderr
    result: dict[str, object] = {"converted": proc.returncode == 0 and out.exists(),
                                 "log": [ln for ln in relevant(text) if not ln.startswith(("DEBUG:", "INFO:"))]}
    if verbose:
        found = re.search(r"chkhsh: ([0-9a-f]{64})", text)
        result["chkhsh"] = found.group(1) if found else None
    if result["converted"]:
        result |= gguf_shape(out)
    return result


def gguf_shape(path: Path) -> dict[str, object]:
    import gguf

    reader = gguf.GGUFReader(path)
    tokens = reader.fields["tokenizer.ggml.tokens"]
    shapes = {t.name: [int(d) for d in reversed(t.shape)] for t in reader.tensors
              if t.name in ("token_embd.weight", "output.weight")}
    n = len(tokens.data)
    texts = [bytes(tokens.parts[i]).decode("utf-8", "replace") for i in tokens.data]
    scores = reader.fields.get("tokenizer.ggml.scores")
    types = reader.fields["tokenizer.ggml.token_type"]
    pre = reader.fields.get("tokenizer.ggml.pre")
    return {"ggml_model": bytes(reader.fields["tokenizer.ggml.model"].parts[-1]).decode(),
            "ggml_pre": bytes(pre.parts[-1]).decode() if pre is not None else None,
            "scores_all_minus_1000": bool(scores) and all(float(scores.parts[i][0]) == -1000.0 for i in scores.data),
            "tokens": n, "last_tokens": texts[-4:], "shapes": shapes,
            "pad_fillers": sum(t.startswith("[PAD") for t in texts),
            "added_ids": {t: texts.index(t) for t in GPT2_ADDED if t in texts},  # where the added tokens went
            "added_types": {t: int(types.parts[types.data[texts.index(t)]][0])
                            for t in (*GPT2_ADDED, "<|im_end|>") if t in texts}}  # the GGUF token type


def write_complete_base(path: Path) -> Path:
    """A complete 1-layer Llama GGUF over the healthy base vocabulary of tests/gguf_builders.py, written with
    GGUFWriter alone (no converter): what the slow test loads where only llama_cpp is installed."""
    import gguf
    import numpy as np
    from gguf_builders import N_EMBD, base_vocab, write_vocab

    vocab = base_vocab()
    n, ff, rng = len(vocab.tokens), 32, np.random.default_rng(0)
    writer = gguf.GGUFWriter(path, "llama")
    writer.add_context_length(128)
    writer.add_embedding_length(N_EMBD)
    writer.add_block_count(1)
    writer.add_feed_forward_length(ff)
    writer.add_head_count(2)
    writer.add_head_count_kv(2)
    writer.add_rope_dimension_count(N_EMBD // 2)
    writer.add_layer_norm_rms_eps(1e-6)
    write_vocab(writer, vocab)
    shapes = {"token_embd.weight": (n, N_EMBD), "output_norm.weight": (N_EMBD,), "output.weight": (n, N_EMBD),
              "blk.0.attn_norm.weight": (N_EMBD,), "blk.0.attn_q.weight": (N_EMBD, N_EMBD),
              "blk.0.attn_k.weight": (N_EMBD, N_EMBD), "blk.0.attn_v.weight": (N_EMBD, N_EMBD),
              "blk.0.attn_output.weight": (N_EMBD, N_EMBD), "blk.0.ffn_norm.weight": (N_EMBD,),
              "blk.0.ffn_gate.weight": (ff, N_EMBD), "blk.0.ffn_up.weight": (ff, N_EMBD),
              "blk.0.ffn_down.weight": (N_EMBD, ff)}
    for name, shape in shapes.items():
        data = np.ones(shape, np.float32) if len(shape) == 1 else rng.normal(0, 0.02, shape).astype(np.float32)
        writer.add_tensor(name, data)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


# --- the GGUF cases --------------------------------------------------------------------------------


def rewrite(base: Path, case, out: Path) -> str | None:
    """``base`` (converted by llama.cpp) with ``case``'s tokenizer edits; every other key and tensor kept.
    Returns the case's probe text over the edited vocabulary."""
    import gguf
    from gguf_builders import Vocab, apply_case, probe_of, write_vocab

    reader = gguf.GGUFReader(base)

    def strings(key: str) -> list[str]:
        f = reader.fields[key]
        return [bytes(f.parts[i]).decode("utf-8") for i in f.data]

    def ints(key: str) -> list:
        f = reader.fields[key]
        return [f.parts[i].tolist()[0] for i in f.data]

    vocab = Vocab("llama", "default", strings("tokenizer.ggml.tokens"), ints("tokenizer.ggml.token_type"),
                  [float(x) for x in ints("tokenizer.ggml.scores")], None,
                  {"bos_token_id": 1, "eos_token_id": 2, "unknown_token_id": 0})
    vocab = apply_case(case, vocab)
    arch = bytes(reader.fields["general.architecture"].parts[-1]).decode()
    writer = gguf.GGUFWriter(out, arch)
    for key, field in reader.fields.items():
        if key.startswith(("GGUF.", "tokenizer.", "general.architecture")):
            continue
        vtype = field.types[0]
        if vtype == gguf.GGUFValueType.ARRAY:
            continue
        value = bytes(field.parts[-1]).decode() if vtype == gguf.GGUFValueType.STRING else field.parts[-1].tolist()[0]
        writer.add_key_value(key, value, vtype)
    write_vocab(writer, vocab)
    if case.template:
        writer.add_chat_template(case.template)
    for t in reader.tensors:
        writer.add_tensor(t.name, t.data.reshape([int(d) for d in reversed(t.shape)]), raw_dtype=t.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return probe_of(case, vocab)


CHILD = r"""
import json, sys
import llama_cpp
path, probe = sys.argv[1], sys.argv[2] or None
out = {}
for mode in ("vocab_only", "full"):
    try:
        llm = llama_cpp.Llama(path, vocab_only=(mode == "vocab_only"), n_ctx=32, verbose=True)
    except Exception as exc:
        out[mode] = {"loads": False, "error": str(exc)[:200]}
        continue
    entry = {"loads": True, "n_vocab": llm.n_vocab(), "eos": llm.token_eos(), "bos": llm.token_bos()}
    if probe:
        entry["probe_ids"] = llm.tokenize(probe.encode(), add_bos=False, special=True)
    if mode == "full":
        llm.eval([llm.token_bos()])
        entry["forward"] = True
    out[mode] = entry
print("VERDICT" + json.dumps(out))
"""


def load(path: Path, probe: str | None) -> dict[str, object]:
    proc = subprocess.run([sys.executable, "-c", CHILD, str(path), probe or ""], capture_output=True, text=True,
                          timeout=300)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("VERDICT")), None)
    verdict: dict[str, object] = json.loads(scrub(line[7:])) if line else {"crashed": proc.returncode}
    verdict["log"] = relevant(proc.stderr)
    return verdict


def gpt2_subset(sdist: Path) -> dict[str, object]:
    """What a tokenizer needs to split the converter's test text (``CHKTXT``) exactly as GPT-2 does: the tokens
    of that split and of their merges, at GPT-2's ids, and those merges in GPT-2's order (a subset keeps
    every merge GPT-2 applies to the text, so the lowest-ranked applicable merge is the same at each step).
    Read from GPT-2's vocabulary as llama.cpp ships it (``models/ggml-vocab-gpt-2.gguf``); the full
    tokenizer's hash is checked against the converter's "gpt-2" entry here, the subset's once written
    (``main``; tests rebuild it from tests/data/gpt2_chktxt_subset.json and check it again)."""
    import gguf
    import transformers
    from tokenizers import Tokenizer, models, pre_tokenizers

    reader = gguf.GGUFReader(sdist / "vendor" / "llama.cpp" / "models" / "ggml-vocab-gpt-2.gguf")

    def strings(key: str) -> list[str]:
        f = reader.fields[key]
        return [bytes(f.parts[i]).decode("utf-8") for i in f.data]

    tokens, merges = strings("tokenizer.ggml.tokens"), strings("tokenizer.ggml.merges")
    ids = {t: i for i, t in enumerate(tokens)}
    tk = Tokenizer(models.BPE(vocab=ids, merges=[tuple(m.split(" ", 1)) for m in merges]))
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    full = transformers.PreTrainedTokenizerFast(tokenizer_object=tk, eos_token="<|endoftext|>")
    split = full.encode(CHKTXT)
    if hashlib.sha256(str(split).encode()).hexdigest() != GPT2_CHKHSH:
        raise SystemExit("GPT-2's vocabulary from the sdist does not hash to the converter's 'gpt-2' entry")
    produced: dict[str, list[tuple[str, str]]] = {}
    for m in merges:
        a, b = m.split(" ", 1)
        produced.setdefault(a + b, []).append((a, b))
    need: set[str] = {"<|endoftext|>"}
    stack = [tokens[i] for i in split]
    while stack:
        t = stack.pop()
        if t in need:
            continue
        need.add(t)
        for a, b in produced.get(t, []):
            stack += [a, b]
    kept = [m for m in merges if all(x in need for x in (*m.split(" ", 1), m.replace(" ", "", 1)))]
    return {"source": "GPT-2's vocabulary as llama.cpp ships it (models/ggml-vocab-gpt-2.gguf, llama-cpp-python "
                      "0.3.36): the tokens and merges its split of convert_hf_to_gguf.py's test text uses",
            "n_vocab": len(tokens), "tokens": {str(ids[t]): t for t in sorted(need, key=ids.__getitem__)},
            "merges": kept}


def known_pre_tokenizers(sdist: Path) -> list[str]:
    source = (sdist / "vendor" / "llama.cpp" / "src" / "llama-vocab.cpp").read_text(encoding="utf-8")
    return sorted(set(re.findall(r'tokenizer_pre == "([^"]+)"', source)))


def converter_paths(sdist: Path, tmp: Path, with_load: bool) -> dict[str, object]:
    """The converter-path cases (``gguf_builders.PATH_SETUPS`` and ``PATH_GPT2_SETUPS``): which vocabulary
    reader the converter took (its GGUF's tokenizer model and pre-tokenizer, whether it hashed, whether every
    score is LlamaHfVocab's -1000.0), and, where llama_cpp is importable, whether llama.cpp loads the result."""
    from gguf_builders import PATH_GPT2_SETUPS, PATH_SETUPS

    spm_model = train_spm(tmp)
    out: dict[str, object] = {}
    builds = [(name, lambda f, kw=kw: hf_checkpoint(f, spm_model, **kw)) for name, kw in PATH_SETUPS.items()]
    builds += [(name, lambda f, kw=kw: gpt2_checkpoint(f, **kw)) for name, kw in PATH_GPT2_SETUPS.items()]
    for name, build in builds:
        model = build(tmp / name)
        gguf_path = tmp / f"{name}.gguf"
        result = convert(sdist, model, gguf_path, verbose=True)
        if result["converted"] and with_load:
            result["llama_cpp"] = load(gguf_path, None)
        out[name] = result
        print(name, json.dumps(result)[:300], flush=True)
    return out


def chat_templates(sdist: Path) -> dict[str, object]:
    """Each test template (``gguf_builders.REAL_TEMPLATES`` from the sdist's ``models/templates``, and
    ``WRITTEN_TEMPLATES``) with llama.cpp's own answer where llama_cpp is importable: what
    ``llama_chat_apply_template`` returns and writes for the rules' conversation (``rules/gguf_chat.py``)."""
    from gguf_builders import REAL_TEMPLATES, WRITTEN_TEMPLATES

    from hf_vocab_audit.facts.llama_cpp_chat import llama_cpp_apply
    from hf_vocab_audit.rules.gguf_chat import MESSAGES

    folder = sdist / "vendor" / "llama.cpp" / "models" / "templates"
    texts = {name: (folder / f"{name}.jinja").read_text(encoding="utf-8") for name in REAL_TEMPLATES}
    out: dict[str, object] = {}
    for name, text in (texts | WRITTEN_TEMPLATES).items():
        entry: dict[str, object] = {"source": f"models/templates/{name}.jinja" if name in texts else "written here",
                                    "template": text}
        applied = llama_cpp_apply(text, [dict(m) for m in MESSAGES], False)
        if applied is not None:
            entry["llama_cpp"] = {"result": applied.result, "text": applied.text}
        out[name] = entry
    return out


def llama_cpp_vocab(path: Path, text: str) -> dict[str, object]:
    """llama.cpp's end-of-generation ids of the GGUF at ``path`` (``llama_vocab_is_eog`` over every id of a
    vocabulary-only load) and its tokens of ``text`` (``llama_tokenize`` with ``parse_special``, as a server
    tokenizes a rendered prompt)."""
    import llama_cpp

    llama_cpp.llama_backend_init()
    params = llama_cpp.llama_model_default_params()
    params.vocab_only = True
    model = llama_cpp.llama_model_load_from_file(str(path).encode(), params)
    if not model:
        return {"loaded": False}
    try:
        vocab = llama_cpp.llama_model_get_vocab(model)
        n = int(llama_cpp.llama_vocab_n_tokens(vocab))
        raw = text.encode()
        out = (llama_cpp.llama_token * (len(raw) + 8))()
        count = llama_cpp.llama_tokenize(vocab, raw, len(raw), out, len(raw) + 8, False, True)
        return {"loaded": True, "n_tokens": n, "eog": [i for i in range(n) if llama_cpp.llama_vocab_is_eog(vocab, i)],
                "eos": int(llama_cpp.llama_vocab_eos(vocab)), "eot": int(llama_cpp.llama_vocab_eot(vocab)),
                "after_ids": [int(out[i]) for i in range(max(count, 0))][:8]}
    finally:
        llama_cpp.llama_model_free(model)


def eog(sdist: Path, tmp: Path) -> dict[str, object]:
    """llama.cpp's end-of-generation set against the token a chat template closes an assistant turn with
    (``rules/gguf_stops.py``): the GGUFs of ``gguf_builders.EOG_SETUPS`` and the real templates of
    ``REAL_EOG_TEMPLATES`` over a vocabulary of their markers (``gguf``), and the tiny HF folders of
    ``EOG_FOLDERS`` converted by the sdist's ``convert_hf_to_gguf.py`` (``folders``)."""
    from gguf_builders import (
        EOG_FOLDERS,
        EOG_SETUPS,
        REAL_EOG_TEMPLATES,
        eog_folder,
        eog_gguf,
        template_vocab,
        write_gguf,
    )

    from hf_vocab_audit.rules.gguf_stops import after_answer

    folder = sdist / "vendor" / "llama.cpp" / "models" / "templates"
    ggufs: dict[str, object] = {}
    for name, setup in EOG_SETUPS.items():
        path = eog_gguf(tmp / f"eog-{name}.gguf", setup)
        after = after_answer(setup.template, {"bos_token": "<s>", "eos_token": "</s>"}) or ""
        ggufs[name] = {"after": after} | llama_cpp_vocab(path, after)
        print(name, json.dumps(ggufs[name])[:200], flush=True)
    for name, eos in REAL_EOG_TEMPLATES.items():
        text = (folder / f"{name}.jinja").read_text(encoding="utf-8")
        vocab = template_vocab(text, eos)
        path = write_gguf(tmp / f"eog-{name}.gguf", vocab=vocab, chat_template=text, tensors=False)
        after = after_answer(text, {"bos_token": "<s>", "eos_token": eos or "</s>"}) or ""
        ggufs[name] = ({"source": f"models/templates/{name}.jinja", "template": text, "after": after}
                       | llama_cpp_vocab(path, after))
        print(name, json.dumps(ggufs[name])[:200], flush=True)
    folders: dict[str, object] = {}
    for name, fsetup in EOG_FOLDERS.items():
        model = eog_folder(tmp / f"eog-{name}", fsetup)
        out = tmp / f"eog-{name}.gguf"
        result = convert(sdist, model, out)
        entry: dict[str, object] = {"converted": result["converted"], "log": result["log"]}
        if result["converted"]:
            after = after_answer(fsetup.template, {"eos_token": fsetup.eos}) or ""
            entry |= {"after": after} | llama_cpp_vocab(out, after)
        folders[name] = entry
        print(name, json.dumps(entry)[:300], flush=True)
    return {"gguf": ggufs, "folders": folders}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--sdist", type=Path, required=True, help="the unpacked llama-cpp-python source")
    parser.add_argument("--out", type=Path, default=ROOT / "tests" / "data" / "gguf_verdicts.json")
    parser.add_argument("--paths-only", action="store_true",
                        help="record the converter-path cases and the chat templates only (keys converter_paths, "
                        "chat_templates), keeping the rest")
    parser.add_argument("--eog-only", action="store_true",
                        help="record the end-of-generation cases only (key eog), keeping the rest")
    parser.add_argument("--templates-only", action="store_true",
                        help="record the chat templates only (key chat_templates), keeping the rest")
    args = parser.parse_args()
    if args.eog_only:
        record = json.loads(args.out.read_text(encoding="utf-8"))
        with tempfile.TemporaryDirectory() as tmp_name:
            record["eog"] = eog(args.sdist, Path(tmp_name))
        args.out.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote {args.out}")
        return
    if args.templates_only:
        record = json.loads(args.out.read_text(encoding="utf-8"))
        record["chat_templates"] = chat_templates(args.sdist)
        args.out.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote {args.out}")
        return
    if args.paths_only:
        try:
            import llama_cpp  # noqa: F401
            with_load = True
        except ImportError:
            with_load = False
        record = json.loads(args.out.read_text(encoding="utf-8"))
        with tempfile.TemporaryDirectory() as tmp_name:
            record["converter_paths"] = converter_paths(args.sdist, Path(tmp_name), with_load)
        record["chat_templates"] = chat_templates(args.sdist)
        args.out.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote {args.out}")
        return
    import llama_cpp
    from gguf_builders import CASES

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        spm_model = train_spm(tmp)
        converter: dict[str, object] = {}
        for name, kwargs in (("healthy", {}), ("added_3_tokens_without_resize", {"added": ["<t1>", "<t2>", "<t3>"]}),
                             ("resized_to_72_rows", {"resize": 72}),
                             ("added_3_tokens_resized_to_72_rows", {"added": ["<t1>", "<t2>", "<t3>"], "resize": 72})):
            model = hf_checkpoint(tmp / name, spm_model, **kwargs)
            out = tmp / f"{name}.gguf"
            result = convert(args.sdist, model, out)
            if result["converted"]:
                result["llama_cpp"] = load(out, None)
            converter[name] = result
        for name, kwargs in (("bpe_trained_here", {}),):
            model = bpe_checkpoint(tmp / name, **kwargs)
            converter[name] = convert(args.sdist, model, tmp / f"{name}.gguf", verbose=True)
        subset = gpt2_subset(args.sdist)
        GPT2_SUBSET.write_text(json.dumps(subset, indent=0, ensure_ascii=False) + "\n", encoding="utf-8")
        if hashlib.sha256(str(gpt2_tokenizer().encode(CHKTXT)).encode()).hexdigest() != GPT2_CHKHSH:
            raise SystemExit(f"{GPT2_SUBSET.name}: the subset does not split the test text as GPT-2 does")
        for name, kwargs in GPT2_SETUPS.items():
            model = gpt2_checkpoint(tmp / name, **kwargs)
            out = tmp / f"{name}.gguf"
            result = convert(args.sdist, model, out, verbose=True)
            if result["converted"]:
                result["llama_cpp"] = load(out, None)
            converter[name] = result
            print(name, json.dumps(result)[:300], flush=True)
        base = tmp / "healthy.gguf"
        cases: dict[str, object] = {}
        for case in CASES:
            out = tmp / f"case-{case.name}.gguf"
            probe = rewrite(base, case, out)
            cases[case.name] = load(out, probe) | {"probe": probe}
            print(case.name, json.dumps(cases[case.name])[:200], flush=True)
        (tmp / "paths").mkdir()
        paths = converter_paths(args.sdist, tmp / "paths", True)
        eog_record = eog(args.sdist, tmp)
    record = {
        "llama_cpp": f"llama-cpp-python {llama_cpp.__version__} (its vendored llama.cpp and convert_hf_to_gguf.py)",
        "how": "python scripts/gguf_verdicts.py --sdist <unpacked llama-cpp-python sdist>",
        "known_pre_tokenizers": known_pre_tokenizers(args.sdist),
        "converter": converter,
        "cases": cases,
        "converter_paths": paths,
        "chat_templates": chat_templates(args.sdist),
        "eog": eog_record,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
