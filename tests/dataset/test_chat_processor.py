"""A processor's own chat template (``chat_template.json``, ``chat_template.jinja``) beside the tokenizer: the
scan renders with the template TRL's default processing class (``AutoProcessor``) renders with. Which file
wins is decided by running transformers' loaders, and each verdict by TRL's preparation and one loss step
of a tiny model on CPU (a processor built locally: LlavaProcessor over the tiny tokenizer)."""

from __future__ import annotations

import json
import shutil

import chat_builders
import pytest
from chat_builders import CHATML, trl_outcome
from dataset_builders import write_jsonl

from hf_vocab_audit import audit

pytest.importorskip("trl")

# The tokenizer's own template: no ChatML markers. The processor's (ChatML) uses them: ids 104 and 105,
# rows of the embedding only in the resized checkpoints.
PLAIN = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}{{ eos_token }}\n{% endfor %}"
ROWS = [{"messages": [{"role": "user", "content": "w1 w5"}, {"role": "assistant", "content": "w7"}]}] * 2


def _processor_folder(folder, *, resized, legacy=True, text_only=False, template_in_config=False):
    """A tiny checkpoint whose tokenizer renders PLAIN; unless ``text_only`` a LlavaProcessor saved beside it;
    ``legacy``: the processor's template in chat_template.json (CHATML); ``template_in_config``: the
    tokenizer's template in tokenizer_config.json and no chat_template.jinja (an older save)."""
    from transformers import AutoTokenizer, CLIPImageProcessor, LlavaProcessor

    model = chat_builders.chat_checkpoint(folder.parent / f"{folder.name}-base", PLAIN, resized=resized)
    shutil.copytree(model, folder)
    if not text_only:
        proc = LlavaProcessor(image_processor=CLIPImageProcessor(), tokenizer=AutoTokenizer.from_pretrained(folder),
                              image_token="w99")
        proc.save_pretrained(folder)
        (folder / "chat_template.jinja").write_text(PLAIN, encoding="utf-8")
    if legacy:
        (folder / "chat_template.json").write_text(json.dumps({"chat_template": CHATML}), encoding="utf-8")
    if template_in_config:
        (folder / "chat_template.jinja").unlink()
        config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
        (folder / "tokenizer_config.json").write_text(json.dumps({**config, "chat_template": PLAIN}), encoding="utf-8")
    return folder


def _scan(model, tmp_path, **kwargs):
    data = write_jsonl(tmp_path / "data" / "train.jsonl", ROWS)
    return audit(model, datasets=[data], select=["HVA5"], **kwargs)


def _codes(report):
    return sorted({f.code for f in report.findings if f.code.startswith("HVA5")})


def test_which_file_each_loader_reads(tmp_path):
    """transformers 5.x: AutoProcessor takes the processor's chat_template.json over chat_template.jinja;
    AutoTokenizer reads neither file of the processor's; a text-only folder's chat_template.json is unread."""
    from transformers import AutoProcessor, AutoTokenizer

    folder = _processor_folder(tmp_path / "p", resized=True)
    assert AutoProcessor.from_pretrained(folder).chat_template == CHATML
    assert AutoTokenizer.from_pretrained(folder).chat_template == PLAIN
    text_only = _processor_folder(tmp_path / "t", resized=True, text_only=True)
    loaded = AutoProcessor.from_pretrained(text_only)
    assert not hasattr(loaded, "image_processor") and loaded.chat_template == PLAIN
    assert AutoTokenizer.from_pretrained(text_only).chat_template == PLAIN


def test_the_processor_template_is_the_one_rendered(tmp_path):
    """TRL with its default processing class renders the processor's ChatML: without rows for the markers the
    loss step fails, and the scan finds the ids; with them, both pass. With the tokenizer passed explicitly
    TRL renders PLAIN and runs: the tokenizer's template alone would have said PASS."""
    bad = _processor_folder(tmp_path / "bad", resized=False)
    trl = trl_outcome(bad, ROWS, "sft", tmp_path / "out", processor=True)
    assert trl["stage"] == "forward" and "index out of range" in trl["error"]
    assert trl_outcome(bad, ROWS, "sft", tmp_path / "out")["stage"] == "ok"  # the tokenizer's PLAIN template
    report = _scan(bad, tmp_path)
    assert _codes(report) == ["HVA501"]
    assert "chat_template.json" in report.dataset.splits[0].chat_settings
    assert "template: the processor's chat_template.json" in str(report)
    good = _processor_folder(tmp_path / "good", resized=True)
    assert trl_outcome(good, ROWS, "sft", tmp_path / "out", processor=True)["stage"] == "ok"
    assert _codes(_scan(good, tmp_path)) == []


def test_a_text_only_folder_ignores_chat_template_json(tmp_path):
    folder = _processor_folder(tmp_path / "t", resized=False, text_only=True)
    assert trl_outcome(folder, ROWS, "sft", tmp_path / "out", processor=True)["stage"] == "ok"
    report = _scan(folder, tmp_path)
    assert _codes(report) == []
    assert "chat_template.json is not read" in report.dataset.splits[0].chat_settings


def test_a_processor_without_a_template_of_its_own(tmp_path):
    """The tokenizer's template in tokenizer_config.json, none in the processor's files: AutoProcessor's
    apply_chat_template refuses every row, and TRL with it."""
    folder = _processor_folder(tmp_path / "n", resized=True, legacy=False, template_in_config=True)
    trl = trl_outcome(folder, ROWS, "sft", tmp_path / "out", processor=True)
    assert trl["stage"] == "prepare" and "does not have a chat template" in trl["error"]
    report = _scan(folder, tmp_path)
    assert _codes(report) == ["HVA550"] and "LlavaProcessor" in report.findings[0].message


def _text_only_naming(folder, cls, *, resized, template_in_config):
    """A text-only checkpoint whose tokenizer_config.json names ``cls`` (as Gemma-3's text checkpoints name
    Gemma3Processor) and no processor config: its template in tokenizer_config.json or chat_template.jinja."""
    model = _processor_folder(folder, resized=resized, legacy=False, text_only=True)
    config = json.loads((model / "tokenizer_config.json").read_text(encoding="utf-8"))
    config["processor_class"] = cls
    if template_in_config:
        config["chat_template"] = CHATML
        (model / "chat_template.jinja").unlink(missing_ok=True)
    else:
        (model / "chat_template.jinja").write_text(CHATML, encoding="utf-8")
    (model / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return model


@pytest.mark.parametrize("template_in_config", [True, False])
@pytest.mark.parametrize("cls", ["Gemma3Processor", "LlavaProcessor"])
def test_a_named_processor_that_cannot_be_built(cls, template_in_config, tmp_path):
    """AutoProcessor raises on the folder (no image processor to load): TRL without a processing class stops
    there, TRL given the tokenizer renders its template and trains. The scan warns once (HVA558), not per
    row, and checks the rows as the tokenizer renders them: healthy rows pass, markers without rows fail."""
    from transformers import AutoProcessor

    good = _text_only_naming(tmp_path / "good", cls, resized=True, template_in_config=template_in_config)
    with pytest.raises(OSError, match="image processor"):
        AutoProcessor.from_pretrained(good)
    assert trl_outcome(good, ROWS, "sft", tmp_path / "out", processor=True)["stage"] == "prepare"
    assert trl_outcome(good, ROWS, "sft", tmp_path / "out")["stage"] == "ok"
    (tmp_path / "data").mkdir()
    write_jsonl(tmp_path / "data" / "validation.jsonl", ROWS)
    report = audit(good, datasets=[write_jsonl(tmp_path / "data" / "train.jsonl", ROWS).parent], select=["HVA5"])
    assert [f.code for f in report.findings] == ["HVA558"]  # once for the folder, though two splits
    hit = report.findings[0]
    assert cls in hit.message and "preprocessor_config.json" in hit.message and "processing_class=tokenizer" in hit.message
    assert sorted(hit.details["splits"]) == ["train", "validation"] and report.exit_code() == 0
    bad = _text_only_naming(tmp_path / "bad", cls, resized=False, template_in_config=template_in_config)
    assert trl_outcome(bad, ROWS, "sft", tmp_path / "out")["stage"] == "forward"  # the markers have no rows
    assert _codes(_scan(bad, tmp_path)) == ["HVA501", "HVA558"]
