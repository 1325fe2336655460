"""Tiny checkpoints of the families beyond decoder-only LLMs (Whisper, BART, Llava, Gemma-3), and the
executions that decide what the audit must say: ``generate()`` and forward passes on CPU.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

WHISPER_VOCAB = 60  # ids 50.. are the specials: 50 <|endoftext|>, 51 <|startoftranscript|>, 52 <|en|> ...
WHISPER_GENERATION = {
    "decoder_start_token_id": 51, "bos_token_id": 50, "eos_token_id": 50, "pad_token_id": 50,
    "no_timestamps_token_id": 55, "lang_to_id": {"<|en|>": 52}, "task_to_id": {"transcribe": 53, "translate": 54},
    "is_multilingual": True, "suppress_tokens": [], "begin_suppress_tokens": [], "max_initial_timestamp_index": 5,
    "alignment_heads": [[0, 0]],
}  # fmt: skip


def whisper(folder: Path, **generation: Any) -> Path:
    """A 1-layer Whisper with a Whisper-style generation_config.json (overridden by ``generation``)."""
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    torch.manual_seed(0)
    cfg = WhisperConfig(
        vocab_size=WHISPER_VOCAB, d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
        decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, num_mel_bins=8, max_source_positions=8,
        max_target_positions=32, pad_token_id=50, bos_token_id=50, eos_token_id=50, decoder_start_token_id=51,
        suppress_tokens=[], begin_suppress_tokens=[],
    )  # fmt: skip
    WhisperForConditionalGeneration(cfg).save_pretrained(folder)
    write_generation(folder, {**WHISPER_GENERATION, **generation})
    return folder


def write_generation(folder: Path, data: dict[str, Any]) -> None:
    (folder / "generation_config.json").write_text(json.dumps(data, indent=2))


def generate_error(folder: Path, arch: str = "BartForConditionalGeneration", **kwargs: Any) -> str | None:
    """Load ``folder`` with transformers and run ``generate()`` (greedy, 3 tokens): the exception's type
    name, or None when it runs. Whisper gets mel features, text models a short id sequence and no early
    stop (forced_eos_token_id acts only on the last step)."""
    import transformers

    model = getattr(transformers, arch).from_pretrained(folder).eval()
    if arch.startswith("Whisper"):
        inputs: dict[str, Any] = {"input_features": torch.randn(1, 8, 16, generator=torch.Generator().manual_seed(0))}
    else:
        inputs = {"input_ids": torch.tensor([[0, 5, 6, 2]]), "min_new_tokens": 3}  # reach the forced-eos step
    try:
        with torch.no_grad():
            model.generate(**inputs, max_new_tokens=3, do_sample=False, **kwargs)
    except (IndexError, ValueError, RuntimeError) as exc:
        return type(exc).__name__
    return None


def llava(folder: Path, rows: int = 104, **config: Any) -> Path:
    """A tiny Llava (CLIP vision tower, 8x8 images in 4 patches, Llama text model with ``rows`` rows)."""
    import transformers as T

    torch.manual_seed(0)
    vision = T.CLIPVisionConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                                image_size=8, patch_size=4, projection_dim=16)
    text = T.LlamaConfig(vocab_size=rows, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=2, pad_token_id=3, bos_token_id=1, eos_token_id=2)
    cfg = T.LlavaConfig(vision_config=vision, text_config=text, vision_feature_layer=-1, image_seq_length=4,
                        **{"image_token_index": rows - 1, **config})
    T.LlavaForConditionalGeneration(cfg).save_pretrained(folder)
    return folder


def gemma3(folder: Path, rows: int = 104, **config: Any) -> Path:
    """A tiny Gemma-3 multimodal model (SigLIP tower, 4 tokens per image, Gemma-3 text model with ``rows`` rows)."""
    import transformers as T

    torch.manual_seed(0)
    vision = T.SiglipVisionConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                                  image_size=8, patch_size=4)
    text = T.Gemma3TextConfig(vocab_size=rows, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                              num_attention_heads=2, num_key_value_heads=1, head_dim=8, pad_token_id=3,
                              bos_token_id=1, eos_token_id=2, sliding_window=8)
    cfg = T.Gemma3Config(vision_config=vision, text_config=text, mm_tokens_per_image=4, **config)
    T.Gemma3ForConditionalGeneration(cfg).save_pretrained(folder)
    return folder


def multimodal_forward_error(folder: Path, arch: str, ids: list[int]) -> str | None:
    """Run ``arch`` from ``folder`` on one 8x8 image and ``ids`` (placeholders included): the exception, or None.
    A ``...ForCausalLM`` arch is built from the checkpoint's text config with the multimodal model's text weights."""
    import transformers as T

    input_ids = torch.tensor([ids])
    try:
        with torch.no_grad():
            if arch.endswith("ForCausalLM"):
                full = T.AutoModelForImageTextToText.from_pretrained(folder)
                text = getattr(T, arch)(full.config.text_config)
                text.model.load_state_dict(full.model.language_model.state_dict())
                text(input_ids=input_ids)
            else:
                model = getattr(T, arch).from_pretrained(folder).eval()
                pixels = torch.randn(1, 3, 8, 8, generator=torch.Generator().manual_seed(0))
                model(input_ids=input_ids, pixel_values=pixels)
    except (IndexError, ValueError, RuntimeError) as exc:
        return f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
    return None


CORPUS = ["the cat sat on the mat", "a dog ran in the park", "hello world this is a test",
          "machine translation with marian models", "der hund lief im park", "das ist ein test"]


def marian_tokenizer(folder: Path, added: list[str] | None = None, model_max_length: int = 64) -> int:
    """A Marian (opus-mt style) slow-only tokenizer: a SentencePiece model trained here on a few lines,
    vocab.json with </s> 0, <unk> 1, the pieces, and <pad> last; no tokenizer.json. Returns len(tokenizer)."""
    import shutil
    import tempfile

    import sentencepiece as spm
    from transformers import MarianTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus.txt"
        corpus.write_text("\n".join(CORPUS * 20))
        spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=f"{tmp}/sp", vocab_size=40,
                                       model_type="unigram", character_coverage=1.0, bos_id=-1, eos_id=1, unk_id=2,
                                       pad_id=-1, minloglevel=2)
        sp = spm.SentencePieceProcessor(model_file=f"{tmp}/sp.model")
        vocab = {"</s>": 0, "<unk>": 1}
        for i in range(sp.get_piece_size()):
            vocab.setdefault(sp.id_to_piece(i), len(vocab))
        vocab["<pad>"] = len(vocab)
        for name in ("source.spm", "target.spm"):
            shutil.copy(f"{tmp}/sp.model", folder / name)
    (folder / "vocab.json").write_text(json.dumps(vocab))
    tok = MarianTokenizer(str(folder / "source.spm"), str(folder / "target.spm"), str(folder / "vocab.json"),
                          model_max_length=model_max_length)
    if added:
        tok.add_tokens(added)
    tok.save_pretrained(folder)
    return len(tok)


def marian(folder: Path, rows: int, pad: int, **config: Any) -> Path:
    """A 1-layer MarianMTModel with ``rows`` rows; pad (the last tokenizer id) is also the decoder start."""
    from transformers import MarianConfig, MarianMTModel

    torch.manual_seed(0)
    cfg = MarianConfig(vocab_size=rows, d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                       decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=64,
                       pad_token_id=pad, eos_token_id=0, decoder_start_token_id=pad, forced_eos_token_id=0, **config)
    MarianMTModel(cfg).save_pretrained(folder)
    return folder


def adapter(base: Path, folder: Path, *, tokens: list[str] | None = None, resize: int | None = None,
            pad_to_multiple_of: int | None = None, save_tokenizer: bool = True, **lora: Any) -> Path:
    """Train nothing, but save a LoRA adapter of ``base`` as a fine-tuning script would: tokens added to the
    tokenizer, the model resized (``resize`` rows, or none), ``get_peft_model``, ``save_pretrained``."""
    import transformers as T
    from peft import LoraConfig, get_peft_model

    torch.manual_seed(0)
    tok = T.AutoTokenizer.from_pretrained(base)
    if tokens:
        tok.add_special_tokens({"additional_special_tokens": tokens})
    model = T.AutoModelForCausalLM.from_pretrained(base)
    if resize is not None:
        model.resize_token_embeddings(resize, pad_to_multiple_of=pad_to_multiple_of)
    peft_model = get_peft_model(model, LoraConfig(r=2, target_modules=["q_proj", "v_proj"], **lora))
    peft_model.save_pretrained(folder)
    if save_tokenizer:
        tok.save_pretrained(folder)
    return folder


def peft_load_error(base: Path, folder: Path, *, resize_to: int | None = None, auto: bool = False,
                    ids: list[int] | None = None) -> str | None:
    """Load the adapter as users do: onto the base (resized to ``resize_to`` first) with
    ``PeftModel.from_pretrained``, or with ``AutoPeftModelForCausalLM``; then a forward over ``ids``.
    The exception's type name, or None."""
    import transformers as T
    from peft import AutoPeftModelForCausalLM, PeftModel

    try:
        if auto:
            model = AutoPeftModelForCausalLM.from_pretrained(folder)
        else:
            base_model = T.AutoModelForCausalLM.from_pretrained(base)
            if resize_to is not None:
                base_model.resize_token_embeddings(resize_to)
            model = PeftModel.from_pretrained(base_model, folder)
        with torch.no_grad():
            model(input_ids=torch.tensor([ids or [1, 5, 6, 2]]))
    except (RuntimeError, IndexError, ValueError) as exc:
        return type(exc).__name__
    return None


CLIP_WORDS = 60  # w0..w59 at ids 0..59 in the CLIP layout


def clip_tokenizer(*, layout: str = "clip", added: list[str] | None = None) -> Any:
    """A word-level tokenizer wrapping text in bos ... eos and padding with pad.

    layout "clip": words first, then <pad> 60, <|startoftext|> 61, <|endoftext|> 62 (eos the largest id, as in
    openai/clip-vit-*); "front": <unk> 0, <s> 1, </s> 2, <pad> 3 before the words (the family sweep's);
    "bos-is-eos": the clip layout whose template uses <|endoftext|> for both ends (bos = eos = 62)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    if layout == "front":
        specials = {"<unk>": 0, "<s>": 1, "</s>": 2, "<pad>": 3}
        vocab = {**specials, **{f"w{i}": 4 + i for i in range(CLIP_WORDS)}}
        bos, eos, pad, unk = "<s>", "</s>", "<pad>", "<unk>"
    else:
        vocab = {f"w{i}": i for i in range(CLIP_WORDS)}
        vocab.update({"<pad>": CLIP_WORDS, "<|startoftext|>": CLIP_WORDS + 1, "<|endoftext|>": CLIP_WORDS + 2})
        bos = "<|endoftext|>" if layout == "bos-is-eos" else "<|startoftext|>"
        eos, pad, unk = "<|endoftext|>", "<pad>", "<|endoftext|>"
    tk = Tokenizer(models.WordLevel(vocab, unk_token=unk))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    tk.post_processor = processors.TemplateProcessing(single=f"{bos} $A {eos}",
                                                      special_tokens=[(bos, vocab[bos]), (eos, vocab[eos])])
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, bos_token=bos, eos_token=eos, pad_token=pad, unk_token=unk,
                                  model_max_length=16)
    if added:
        tok.add_tokens(added)
    return tok


def new_clip_text(*, eos_token_id: int, layout: str = "clip", added: list[str] | None = None,
                  bos_token_id: int | None = None) -> tuple[Any, Any]:
    """A live tiny CLIPTextModel (rows for every token, added ones included) and its ``clip_tokenizer``."""
    import transformers

    torch.manual_seed(0)
    tok = clip_tokenizer(layout=layout, added=added)
    rows = len(tok)
    special = {"front": (1, 3)}.get(layout, (CLIP_WORDS + 1, CLIP_WORDS))
    cfg = transformers.CLIPTextConfig(vocab_size=rows, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                      num_attention_heads=2, max_position_embeddings=16, eos_token_id=eos_token_id,
                                      bos_token_id=special[0] if bos_token_id is None else bos_token_id,
                                      pad_token_id=special[1])
    return transformers.CLIPTextModel(cfg), tok


def clip_text(folder: Path, **kwargs: Any) -> Path:
    """``new_clip_text`` saved to ``folder``."""
    model, tok = new_clip_text(**kwargs)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder
