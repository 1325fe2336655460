"""The families the architecture sweep cannot build from one text config, each case built with transformers' (or
peft's) own classes and its expected verdict decided by running it, for ``scripts/family_sweep.py --families``.

Each case reuses the builder and the oracle of the test that covers the family, and returns what the run showed
("clean", "fails: <what raised>", or "wrong: <what runs but is wrong>") with what the audit is given (a folder or
a file, and datasets). The GGUF vocabulary cases are the exception: llama.cpp is not installed here, so their
verdict is what llama.cpp's own code does, read in the llama-cpp-python 0.3.36 sdist (``src/llama-vocab.cpp``,
``llama_vocab::impl::load``), and the row says so.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

TESTS = Path(__file__).resolve().parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))
for sub in (TESTS / "rules", TESTS / "facts", TESTS / "dataset"):  # the tests whose builders the cases reuse
    if str(sub) not in sys.path:
        sys.path.append(str(sub))  # after everything else: nothing there may shadow another module


@dataclass(frozen=True)
class Run:
    """What running the case showed, and what the audit reads."""

    execution: str
    target: Path
    datasets: tuple[str, ...] = ()


@dataclass(frozen=True)
class FamilyCase:
    family: str
    case: str
    build_and_run: Callable[[Path], Run]
    codes: tuple[str, ...] = field(default=())  # the codes this family's rules report (warnings counted)


def _ran(fails: bool, what: str) -> str:
    return f"fails: {what}" if fails else "clean"


# --- CTC speech models ---------------------------------------------------------------------------------------


def _ctc(added: int = 0, blank_outside: bool = False) -> Callable[[Path], Run]:
    def run(folder: Path) -> Run:
        import json

        import torch
        import transformers
        from test_family_ctc_deberta import _ctc as build

        build(folder, "Wav2Vec2", added=added)
        if blank_outside:
            cfg = json.loads((folder / "config.json").read_text())
            (folder / "config.json").write_text(json.dumps({**cfg, "pad_token_id": cfg["vocab_size"]}))
        tok = transformers.AutoTokenizer.from_pretrained(folder)
        model = transformers.AutoModelForCTC.from_pretrained(folder).eval()
        try:
            model(torch.randn(1, 4000), labels=torch.tensor([[5, 6, len(tok) - 1]]))
        except (ValueError, RuntimeError, IndexError) as exc:
            return Run(f"fails: {type(exc).__name__}: {str(exc).splitlines()[0][:80]}", folder)
        return Run("clean", folder)

    return run


# --- DeBERTa-v2 with spm.model ---------------------------------------------------------------------------------


def _deberta(added: int) -> Callable[[Path], Run]:
    def run(folder: Path) -> Run:
        from test_family_ctc_deberta import _deberta as build
        from test_family_ctc_deberta import _deberta_lookup_fails

        build(folder, rows=32, added=added)
        _, fails = _deberta_lookup_fails(folder)
        return Run(_ran(fails, "IndexError: index out of range in self"), folder)

    return run


# --- Mllama, PaliGemma -----------------------------------------------------------------------------------------


def _mllama(more: int) -> Callable[[Path], Run]:
    def run(folder: Path) -> Run:
        from test_vision_families import _mllama as build

        image_runs, last_runs = build(folder, more)
        return Run(_ran(not (image_runs and last_runs), "IndexError: index out of range in self"), folder)

    return run


def _paligemma(rows_extra: int, in_files: bool) -> Callable[[Path], Run]:
    def run(folder: Path) -> Run:
        from test_vision_families import V
        from test_vision_families import _paligemma as build

        runs = build(folder, V + rows_extra, in_files)
        return Run(_ran(not runs, "IndexError: index out of range in self (the processor's tokens)"), folder)

    return run


# --- multi-label heads with integer multi-hot labels -------------------------------------------------------------


def _multi_label(labels: list, problem_type: str | None = "multi_label_classification") -> Callable[[Path], Run]:
    def run(folder: Path) -> Run:
        from test_multi_label_targets import _data, _model
        from test_multi_label_targets import _run as execute

        model = _model(folder / "model", problem_type=problem_type)
        data = _data(folder / "data", labels)
        ran = execute(model, data)  # "runs", "negative loss", "raises: <type>"
        execution = {"runs": "clean", "negative loss": "wrong: BCE loss below 0 (targets are no probabilities)"}.get(
            ran, f"fails: {ran.removeprefix('raises: ')} in the loss (DataCollatorWithPadding batch)")
        return Run(execution, model, (str(data),))

    return run


# --- sentence-transformers without max_seq_length ----------------------------------------------------------------


def _st(model_type: str, model_max_length: int | None) -> Callable[[Path], Run]:
    def run(folder: Path) -> Run:
        from test_sentence_transformers import effective_run, st_without_max_seq_length

        st = st_without_max_seq_length(folder / "st", model_type, model_max_length)
        length, error = effective_run(st)
        return Run(_ran(error is not None, f"{error} in encode() (sentence-transformers truncates to {length})"), st)

    return run


# --- CLIP text towers pooling by eos_token_id --------------------------------------------------------------------


def _clip(text: str, **kwargs: object) -> Callable[[Path], Run]:
    def run(folder: Path) -> Run:
        from test_clip_pooling import clip_text, pooled_and_eos

        clip_text(folder, **kwargs)  # type: ignore[arg-type]
        pooled_at, eos_at = pooled_and_eos(folder, text)
        if pooled_at == eos_at:
            return Run("clean", folder)
        return Run(f"wrong: pooled at position {pooled_at}, the eos at {eos_at} (no error)", folder)

    return run


# --- LoRA adapter with only the embedding saved (HVA806) ---------------------------------------------------------


def _lora(save_embedding_layers: bool | str, **lora: object) -> Callable[[Path], Run]:
    def run(folder: Path) -> Run:
        import torch
        from builders import checkpoint
        from test_adapter_lm_head_rows import loaded_lm_head_rows, save_adapter

        base = checkpoint(folder / "base", "llama", 104)  # untied
        adapter, trained = save_adapter(base, folder / "adapter", save_embedding_layers=save_embedding_layers,
                                        **lora)
        first, second = loaded_lm_head_rows(base, adapter, 1), loaded_lm_head_rows(base, adapter, 2)
        if torch.equal(first, second) and torch.equal(first, trained):
            return Run("clean", adapter)
        return Run("wrong: the new ids' lm_head rows differ between loads and from the trained ones", adapter)

    return run


# --- GGUF vocabularies (llama.cpp's code read, not run) ---------------------------------------------------------


def _gguf(builder: str, llama_cpp: str) -> Callable[[Path], Run]:
    def run(folder: Path) -> Run:
        import hostile_gguf_vocab

        (path,) = getattr(hostile_gguf_vocab, builder)(folder)
        return Run(llama_cpp, Path(path))

    return run


INT_HOT = [[1, 0, 1], [0, 0, 0], [0, 1, 0]]
FLOAT_HOT = [[1.0, 0.0, 1.0], [0.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
WORDS = 60  # test_clip_pooling's word count: the eos of its CLIP layout is 62

CASES: tuple[FamilyCase, ...] = (
    FamilyCase("CTC (Wav2Vec2ForCTC)", "healthy", _ctc()),
    FamilyCase("CTC (Wav2Vec2ForCTC)", "3 tokens past the head", _ctc(added=3)),
    FamilyCase("CTC (Wav2Vec2ForCTC)", "blank (pad) outside the head", _ctc(blank_outside=True)),
    FamilyCase("DeBERTa-v2 spm.model", "healthy", _deberta(0)),
    FamilyCase("DeBERTa-v2 spm.model", "5 added tokens past the rows", _deberta(5)),
    FamilyCase("Mllama", "healthy (<|image|> at vocab_size)", _mllama(0)),
    FamilyCase("Mllama", "10 tokens past the extra rows", _mllama(10)),
    FamilyCase("PaliGemma", "processor tokens added at load, past the rows", _paligemma(0, False)),
    FamilyCase("PaliGemma", "rows for the processor's tokens", _paligemma(1153, False)),
    FamilyCase("PaliGemma", "processor tokens in the files", _paligemma(1153, True)),
    FamilyCase("multi-label int labels", "float multi-hot", _multi_label(FLOAT_HOT), ("HVA563", "HVA564")),
    FamilyCase("multi-label int labels", "int multi-hot", _multi_label(INT_HOT), ("HVA563", "HVA564")),
    FamilyCase("multi-label int labels", "float targets 2.0 and -100.0",
               _multi_label([[1.0, 0.0, 2.0], [0.0, -100.0, 1.0]]), ("HVA563", "HVA564")),
    FamilyCase("multi-label int labels", "4-wide vectors, num_labels 3", _multi_label([[1, 0, 1, 0], [0, 1, 0, 1]]),
               ("HVA560", "HVA563")),
    FamilyCase("multi-label int labels", "int multi-hot, problem_type unset", _multi_label(INT_HOT, None),
               ("HVA563",)),
    FamilyCase("multi-label int labels", "float multi-hot, problem_type unset", _multi_label(FLOAT_HOT, None),
               ("HVA563",)),
    FamilyCase("sentence-transformers, no max_seq_length", "RoBERTa, model_max_length unset", _st("roberta", None)),
    FamilyCase("sentence-transformers, no max_seq_length", "RoBERTa, model_max_length 60", _st("roberta", 60)),
    FamilyCase("sentence-transformers, no max_seq_length", "BERT, model_max_length unset", _st("bert", None)),
    FamilyCase("CLIP text eos", "legacy eos 2, eos the largest id", _clip("w5 w59 w7", eos_token_id=2)),
    FamilyCase("CLIP text eos", "eos id = the tokenizer's", _clip("w5 w59 w7", eos_token_id=WORDS + 2)),
    FamilyCase("CLIP text eos", "legacy eos 2, a token added after the eos",
               _clip("w5 <cat-toy> w7", eos_token_id=2, added=["<cat-toy>"])),
    FamilyCase("CLIP text eos", "legacy eos 2, eos below the words", _clip("w5 w59 w7", eos_token_id=2,
                                                                          layout="front")),
    FamilyCase("CLIP text eos", "eos id not the tokenizer's", _clip("w5 w6 w7", eos_token_id=WORDS - 1)),
    FamilyCase("CLIP text eos", "eos id = the bos", _clip("w5 w6 w7", eos_token_id=WORDS + 2, layout="bos-is-eos")),
    FamilyCase("LoRA, embedding saved alone", "modules_to_save embed_tokens, save_embedding_layers=False",
               _lora(False, modules_to_save=["embed_tokens"])),
    FamilyCase("LoRA, embedding saved alone", "trainable_token_indices, save_embedding_layers=False",
               _lora(False, trainable_token_indices=[104, 105])),
    FamilyCase("LoRA, embedding saved alone", "modules_to_save embed_tokens, default saving",
               _lora("auto", modules_to_save=["embed_tokens"])),
    FamilyCase("GGUF vocabulary", "scores shorter than the tokens",
               _gguf("gguf_scores_shorter_than_tokens", "fails (llama.cpp's code, read): Index out of array bounds "
                     "for scores")),
    FamilyCase("GGUF vocabulary", "token types shorter than the tokens",
               _gguf("gguf_token_types_shorter_than_tokens", "fails (llama.cpp's code, read): Index out of array "
                     "bounds for toktypes")),
    FamilyCase("GGUF vocabulary", "vocabulary only, eos past the tokens",
               _gguf("gguf_vocab_only_eos_past_tokens", "wrong (llama.cpp's code, read): bad special token, eos "
                     "stays the default")),
    FamilyCase("GGUF vocabulary", "vocabulary only, healthy", _gguf("gguf_vocab_only_healthy", "clean (llama.cpp's "
                                                                    "code, read): vocab_only loads")),
)
