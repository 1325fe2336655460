"""Vision chat splits (TRL's ``images`` column): placeholders against each row's images (HVA570) and the
expanded placeholders against ``max_length`` (HVA571). Every verdict is decided by running the real
processor on CPU as TRL's vision collator calls it (``prepare_multimodal_messages``, then the processor's
``apply_chat_template`` with truncation to ``max_length``) on blank images of the rows' sizes: a tiny
LlavaProcessor (fixed expansion) and a tiny Qwen2VLProcessor (dynamic resolution) over a word-level tokenizer."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
from builders import checkpoint
from dataset_builders import write_jsonl

from hf_vocab_audit import audit

pytest.importorskip("trl")
pytest.importorskip("PIL")

PARTS = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{% if m['content'] is string %}{{ m['content'] }}"
         "{% else %}{% for p in m['content'] %}{% if p['type'] == 'image' %}IMG{% else %}{{ p['text'] }}{% endif %}"
         "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}")
LLAVA_TEMPLATE = PARTS.replace("IMG", "<image>")
QWEN_TEMPLATE = PARTS.replace("IMG", "<|vision_start|><|image_pad|><|vision_end|>")
GEMMA_TEMPLATE = PARTS.replace("IMG", "<start_of_image>")
GEMMA_TOKENS = ["<|im_start|>", "<|im_end|>", "<start_of_image>", "<end_of_image>", "<image_soft_token>"]
QWEN_TOKENS = ["<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"]


def _llava_processor(folder: Path):
    from transformers import AutoTokenizer, CLIPImageProcessor, LlavaProcessor

    ip = CLIPImageProcessor(size={"shortest_edge": 28}, crop_size={"height": 28, "width": 28})
    return LlavaProcessor(image_processor=ip, tokenizer=AutoTokenizer.from_pretrained(folder), patch_size=14,
                          vision_feature_select_strategy="default", num_additional_image_tokens=1,
                          chat_template=LLAVA_TEMPLATE)


def _qwen_processor(folder: Path):
    from transformers import AutoTokenizer, Qwen2VLImageProcessor, Qwen2VLProcessor
    from transformers.processing_utils import ProcessorMixin

    ip = Qwen2VLImageProcessor(min_pixels=56 * 56, max_pixels=28 * 28 * 16)
    check = ProcessorMixin.check_argument_for_proper_class
    # Without torchvision the video processor cannot be built; the image path does not need one.
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ProcessorMixin, "check_argument_for_proper_class",
                   lambda self, name, arg: None if arg is None else check(self, name, arg))
        return Qwen2VLProcessor(image_processor=ip, tokenizer=AutoTokenizer.from_pretrained(folder),
                                chat_template=QWEN_TEMPLATE), ip


def _gemma_processor(folder: Path):
    from transformers import AutoTokenizer, Gemma3ImageProcessor, Gemma3Processor

    config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    config["extra_special_tokens"] = {"boi_token": "<start_of_image>", "eoi_token": "<end_of_image>",
                                      "image_token": "<image_soft_token>"}  # as Gemma-3's tokenizer names them
    (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return Gemma3Processor(image_processor=Gemma3ImageProcessor(size={"height": 28, "width": 28}),
                           tokenizer=AutoTokenizer.from_pretrained(folder), chat_template=GEMMA_TEMPLATE,
                           image_seq_length=5)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """{"llava": (folder, processor), "qwen": (folder, processor)}: checkpoints whose files carry the
    processor's configs, as save_pretrained writes them."""
    root = tmp_path_factory.mktemp("vision")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        llava = checkpoint(root / "llava", "llama", rows=107, tokenizer_vocab=104,
                           added_special=["<|im_start|>", "<|im_end|>", "<image>"], chat_template=LLAVA_TEMPLATE)
        lp = _llava_processor(llava)
        lp.save_pretrained(llava)
        qwen = checkpoint(root / "qwen", "llama", rows=110, tokenizer_vocab=104, added_special=QWEN_TOKENS,
                          chat_template=QWEN_TEMPLATE)
        qp, ip = _qwen_processor(qwen)
        ip.save_pretrained(qwen)  # preprocessor_config.json (the processor cannot save without its video part)
        (qwen / "processor_config.json").write_text(json.dumps({"processor_class": "Qwen2VLProcessor"}))
        gemma = checkpoint(root / "gemma", "llama", rows=109, tokenizer_vocab=104, added_special=GEMMA_TOKENS,
                           chat_template=GEMMA_TEMPLATE)
        gp = _gemma_processor(gemma)
        gp.save_pretrained(gemma)
    return {"llava": (llava, lp), "qwen": (qwen, qp), "gemma": (gemma, gp)}


def _images(data: Path, row: dict) -> list:
    from PIL import Image

    out = []
    for name in row.get("images", []):
        path = data / name
        out.append(Image.open(path).convert("RGB") if path.is_file() else Image.new("RGB", (28, 28)))
    return out


def collator_outcome(processor, row: dict, data: Path, max_length: int | None = None) -> tuple[str | None, int]:
    """What TRL's vision collator does with ``row`` (its images blank, of the files' sizes): (the error it
    raises, or None; the index after the last image token of the batch it returns). Under prompt-completion
    the collator truncates the ids itself: a cut image token is then reported as the model's error."""
    from trl.trainer.sft_trainer import DataCollatorForVisionLanguageModeling

    def run(limit: int | None):
        collator = DataCollatorForVisionLanguageModeling(processor, max_length=limit,
                                                         completion_only_loss="prompt" in row)
        out = collator([{**row, "images": _images(data, row)}])
        ids = out["input_ids"][0].tolist()
        # Gemma-3 counts its boi string (``processor.image_token``); the image's own tokens follow it.
        feature = processor.tokenizer.image_token if hasattr(processor, "boi_token") else processor.image_token
        image_id = processor.tokenizer.convert_tokens_to_ids(feature)
        positions = [i for i, t in enumerate(ids) if t == image_id]
        return len(positions), (positions[-1] + 1 if positions else 0)

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tokens, end = run(max_length)
            full, _ = run(None)
    except ValueError as exc:
        return str(exc), 0
    if tokens != full:  # what the model's forward then raises
        return f"Image features and image tokens do not match, tokens: {tokens}, features: {full}", end
    return None, end


def _scan(model: Path, rows: list[dict], data: Path, **kwargs):
    path = write_jsonl(data / "train.jsonl", rows)
    return audit(model, datasets=[path], select=["HVA5"], **kwargs)


def _hits(report, code):
    return [f for f in report.findings if f.code == code]


def _row(content, images=1):
    answer = [{"type": "text", "text": "w3"}] if isinstance(content, list) else "w3"  # one shape per column
    return {"messages": [{"role": "user", "content": content}, {"role": "assistant", "content": answer}],
            "images": [f"img{i}.png" for i in range(images)]}


IMAGE_PART = [{"type": "image", "text": None}, {"type": "text", "text": "w1"}]


@pytest.mark.parametrize("row, fires", [
    (_row("w1 w2"), False),  # TRL inserts one image part per image
    (_row("w1 w2", images=2), False),
    (_row(IMAGE_PART), False),
    (_row(IMAGE_PART, images=2), True),  # TRL: 2 images for 1 placeholder
    (_row("<image> w1"), True),  # a placeholder string in the text besides the inserted part
    ({"messages": [{"role": "user", "content": "<image> w1"}, {"role": "assistant", "content": "w3"}], "images": []},
     True),  # a placeholder without an image
])
def test_placeholders_against_images_follow_the_processor(models, tmp_path, row, fires):
    model, processor = models["llava"]
    error, _ = collator_outcome(processor, row, tmp_path)
    assert (error is not None) == fires, error
    healthy = _row(IMAGE_PART) if isinstance(row["messages"][0]["content"], list) else _row("w1 w2")
    report = _scan(model, [healthy, row], tmp_path)
    hits = _hits(report, "HVA570")
    assert bool(hits) == fires
    if fires:
        assert hits[0].location.row == 1 and "HVA571" not in {f.code for f in report.findings}


@pytest.mark.parametrize("kind", ["llava", "gemma"])
def test_fixed_expansion_cut_by_max_length(models, tmp_path, kind):
    """Llava: 4 tokens per image ((28/14)^2 + 1 cls - 1); Gemma-3: boi, 5 image tokens, eoi. The processor
    raises when truncation cuts them (Gemma-3: fewer image tokens than features, the model's error)."""
    model, processor = models[kind]
    rows = [_row("w1 w2"), _row("w1 w2", images=2)]
    needed = [collator_outcome(processor, r, tmp_path)[1] for r in rows]
    limit = needed[1] - 1  # the first row keeps its image tokens, the second loses one
    assert collator_outcome(processor, rows[0], tmp_path, limit)[0] is None
    assert collator_outcome(processor, rows[1], tmp_path, limit)[0] is not None
    assert collator_outcome(processor, rows[1], tmp_path, needed[1])[0] is None
    hits = _hits(_scan(model, rows, tmp_path, max_length=limit), "HVA571")
    assert len(hits) == 1 and hits[0].location.row == 1
    assert f"needs max_length {needed[1]} " in hits[0].message and "(exact)" in hits[0].message
    assert not _hits(_scan(model, rows, tmp_path, max_length=needed[1]), "HVA571")
    assert not _hits(_scan(model, rows, tmp_path), "HVA571")  # no max_length: nothing is truncated


@pytest.mark.parametrize("row, fires", [
    (_row("w1 w2"), False),
    (_row("<start_of_image> w1"), True),  # Gemma-3 counts its boi string
    (_row("<image> w1 <|image_pad|>"), False),  # other processors' placeholders: plain text to Gemma-3
])
def test_gemma3_counts_its_boi_string(models, tmp_path, row, fires):
    model, processor = models["gemma"]
    error, _ = collator_outcome(processor, row, tmp_path)
    assert (error is not None) == fires, error
    assert bool(_hits(_scan(model, [row], tmp_path), "HVA570")) == fires


@pytest.mark.parametrize("size", [(100, 60), (60, 100), (130, 250), (300, 40), (20, 20), (1000, 600)])
def test_qwen2_vl_expansion_from_the_image_header(models, tmp_path, size):
    """Qwen2-VL's tokens per image depend on its size: read from the file's header, as the processor resizes it."""
    from PIL import Image

    model, processor = models["qwen"]
    Image.new("RGB", size).save(tmp_path / "img0.png")
    row = _row("w1 w2")
    _, needed = collator_outcome(processor, row, tmp_path)
    assert collator_outcome(processor, row, tmp_path, needed - 1)[0] is not None
    assert collator_outcome(processor, row, tmp_path, needed)[0] is None
    hits = _hits(_scan(model, [row], tmp_path, max_length=needed - 1), "HVA571")
    assert len(hits) == 1 and f"needs max_length {needed} " in hits[0].message and "(exact)" in hits[0].message
    assert not _hits(_scan(model, [row], tmp_path, max_length=needed), "HVA571")


def test_qwen2_vl_unknown_size_uses_the_max_pixels_bound(models, tmp_path):
    """No file to read: the largest expansion max_pixels allows, said as such."""
    from PIL import Image

    model, processor = models["qwen"]
    row = {**_row("w1 w2"), "images": ["missing.png"]}
    Image.new("RGB", (2000, 2000)).save(tmp_path / "big.png")  # the largest image the processor makes
    _, needed = collator_outcome(processor, {**row, "images": ["big.png"]}, tmp_path)
    hits = _hits(_scan(model, [row], tmp_path, max_length=needed - 1), "HVA571")
    assert len(hits) == 1 and f"needs max_length {needed} " in hits[0].message and "max_pixels bound" in hits[0].message
    assert not _hits(_scan(model, [row], tmp_path, max_length=needed), "HVA571")


def test_image_paths_outside_the_data_folder_are_not_read(models, tmp_path):
    """An untrusted row cannot make the scan open files outside its own folder: the bound is used instead."""
    from PIL import Image

    model, _ = models["qwen"]
    Image.new("RGB", (20, 20)).save(tmp_path / "small.png")
    data = tmp_path / "data"
    hits = _hits(_scan(model, [{**_row("w1 w2"), "images": ["../small.png"]}], data, max_length=12), "HVA571")
    assert len(hits) == 1 and "max_pixels bound" in hits[0].message


def test_text_only_split_is_not_rendered_again(models, tmp_path):
    """Without an images column nothing of this runs (the chat scan stays as cheap as before)."""
    model, _ = models["llava"]
    rows = [{"messages": [{"role": "user", "content": "<image> w1"}, {"role": "assistant", "content": "w3"}]}]
    assert not _hits(_scan(model, rows, tmp_path, max_length=4), "HVA570")


def test_hostile_image_entries_are_sized_by_the_bound(tmp_path):
    """The catalogue's "vision rows" (a device, paths and links out of the data folder, a FIFO, a header past
    PIL's bomb limit, 100,000 images in a row): never opened, sized by max_pixels; each is HVA571."""
    from malformed import CASES

    cases = [c for c in CASES if c.group == "vision rows"]
    assert len(cases) == 6
    for c in cases:
        args = c.build(tmp_path / c.name / "ckpt")
        model, data, limit = args[0], args[2], int(args[4])
        hits = _hits(audit(model, datasets=[data], select=["HVA5"], max_length=limit), "HVA571")
        assert len(hits) == 1 and "max_pixels bound" in hits[0].message, (c.name, hits)


def test_video_placeholder_without_videos(models, tmp_path):
    """A video placeholder in a row that carries no video: Qwen2-VL's processor raises ("no videos were
    passed"); TRL's collator passes images only."""
    model, processor = models["qwen"]
    row = _row("w1 <|video_pad|>")
    error, _ = collator_outcome(processor, row, tmp_path)
    assert error is not None and "no videos were passed" in error
    hits = _hits(_scan(model, [_row("w1 w2"), row], tmp_path), "HVA570")
    assert len(hits) == 1 and hits[0].location.row == 1 and "<|video_pad|>" in hits[0].message


def test_prompt_completion_rows(models, tmp_path):
    """Prompt-completion turns: the collator processes the prompt with its images, then truncates prompt +
    completion itself; cutting an image token is the model's error at the forward."""
    model, processor = models["llava"]
    healthy = {"prompt": [{"role": "user", "content": "w1 w2"}], "completion": [{"role": "assistant", "content": "w3"}],
               "images": ["img0.png"]}
    broken = {**healthy, "images": ["img0.png", "img1.png"], "prompt": [{"role": "user", "content": "w1 w2 w4 w5"}]}
    _, needed = collator_outcome(processor, broken, tmp_path)
    limit = needed - 1
    assert collator_outcome(processor, healthy, tmp_path, limit)[0] is None
    assert collator_outcome(processor, broken, tmp_path, limit)[0] is not None
    hits = _hits(_scan(model, [healthy, broken], tmp_path, max_length=limit), "HVA571")
    assert len(hits) == 1 and hits[0].location.row == 1 and f"needs max_length {needed} " in hits[0].message
    assert not _hits(_scan(model, [healthy, broken], tmp_path, max_length=needed), "HVA571")


def test_report_says_how_media_were_checked(models, tmp_path):
    from hf_vocab_audit.formats import render

    model, _ = models["qwen"]
    report = _scan(model, [_row("w1 w2")], tmp_path, max_length=64)
    split = report.dataset.splits[0]
    assert "media: 'images', placeholders '<|image_pad|>', '<|video_pad|>', tokens per image from each image's " \
           "header" in split.chat_settings
    text = render(report, "text")
    assert "  media: 'images'" in text
    assert "column 'images': no role" not in text  # read with the rows, not listed as skipped


def test_image_bytes_of_datasets_image_feature(models, tmp_path):
    """Parquet as ``datasets`` saves an Image feature (``{"bytes", "path"}``): the header is read from the bytes."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq
    from PIL import Image

    model, processor = models["qwen"]
    buffer = io.BytesIO()
    Image.new("RGB", (130, 250)).save(buffer, format="PNG")
    Image.new("RGB", (130, 250)).save(tmp_path / "img0.png")  # what the collator is given
    row = _row("w1 w2")
    _, needed = collator_outcome(processor, row, tmp_path)
    image = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    table = pa.table({"messages": [row["messages"]],
                      "images": pa.array([[{"bytes": buffer.getvalue(), "path": None}]], type=pa.list_(image))})
    data = tmp_path / "parquet" / "train.parquet"
    data.parent.mkdir()
    pq.write_table(table, data)
    hits = _hits(audit(model, datasets=[data], select=["HVA5"], max_length=needed - 1), "HVA571")
    assert len(hits) == 1 and f"needs max_length {needed} " in hits[0].message and "(exact)" in hits[0].message


@pytest.mark.parametrize("name, image_processor, extra", [
    ("Qwen2_5_VLProcessor", "Qwen2VLImageProcessor", {}),
    ("Qwen3VLProcessor", "Qwen2VLImageProcessor", {}),
    ("LlavaNextProcessor", "LlavaNextImageProcessor", {"image_token": "<|image_pad|>", "patch_size": 14}),
    ("LlavaOnevisionProcessor", "LlavaOnevisionImageProcessor", {"image_token": "<|image_pad|>", "num_image_tokens": 4}),
])
def test_each_counted_processor_raises_on_a_count_mismatch(models, tmp_path, name, image_processor, extra):
    """The other processors whose placeholders are counted: each raises when the rendered text holds more
    image tokens than images (the collator's call after rendering), and the scan says so."""
    import shutil

    import transformers
    from PIL import Image
    from transformers import AutoTokenizer
    from transformers.processing_utils import ProcessorMixin

    base, _ = models["qwen"]
    model = tmp_path / "model"
    shutil.copytree(base, model)
    (model / "processor_config.json").write_text(json.dumps({"processor_class": name, "image_token": "<|image_pad|>"}))
    check = ProcessorMixin.check_argument_for_proper_class
    with pytest.MonkeyPatch.context() as mp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mp.setattr(ProcessorMixin, "check_argument_for_proper_class",
                   lambda self, n, arg: None if arg is None else check(self, n, arg))
        processor = getattr(transformers, name)(image_processor=getattr(transformers, image_processor)(),
                                                tokenizer=AutoTokenizer.from_pretrained(model), **extra)
    image = [Image.new("RGB", (56, 56))]
    processor(text=["<|vision_start|><|image_pad|><|vision_end|>w1"], images=image)
    with pytest.raises(ValueError, match="should be the same as the number of images"):
        processor(text=["<|vision_start|><|image_pad|><|vision_end|>w1 <|image_pad|>"], images=image)
    data = tmp_path / "data"
    assert not _hits(_scan(model, [_row("w1 w2")], data), "HVA570")
    hits = _hits(_scan(model, [_row("w1 w2"), _row("w1 <|image_pad|>")], data), "HVA570")
    assert len(hits) == 1 and hits[0].location.row == 1


def test_without_pillow_the_bound_is_used(models, tmp_path, monkeypatch):
    """Pillow is not in the base install: every image is then sized by max_pixels, said as such."""
    import sys

    from PIL import Image

    model, _ = models["qwen"]
    Image.new("RGB", (20, 20)).save(tmp_path / "img0.png")
    monkeypatch.setitem(sys.modules, "PIL", None)  # `from PIL import Image` raises ImportError
    hits = _hits(_scan(model, [_row("w1 w2")], tmp_path, max_length=12), "HVA571")
    assert len(hits) == 1 and "max_pixels bound" in hits[0].message


def test_a_huge_processor_setting_falls_back_to_the_default():
    """preprocessor_config.json is untrusted: min_pixels of 10**400 made the size arithmetic raise
    OverflowError ("unexpected" exit 2); past 2**31 a setting is no processor's and the default is used."""
    from hf_vocab_audit.dataset.chat_media import _int

    assert _int({"min_pixels": 10**400}, "min_pixels", 3136) == 3136
    assert _int({"min_pixels": 2**31 + 1}, "min_pixels", None) is None
    assert _int({"min_pixels": 56 * 56}, "min_pixels", None) == 3136
