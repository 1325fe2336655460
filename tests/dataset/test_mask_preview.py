"""``check --show-mask N``: the rows as the trainer gets them, the tokens with a loss marked. Which tokens get a
loss is decided by running TRL's own preparation and collator (labels != -100) on a public training template
that TRL ships (Qwen2.5's, with ``{% generation %}``)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
from chat_builders import chat_checkpoint
from dataset_builders import write_jsonl

from hf_vocab_audit import audit
from hf_vocab_audit.core.sections import MAX_PREVIEW_ROWS, SplitSection
from hf_vocab_audit.formats import html, text
from hf_vocab_audit.gate import run_gate


def _trl_template(name: str) -> str:
    trl = pytest.importorskip("trl")
    return (Path(trl.__file__).parent / "chat_templates" / f"{name}.jinja").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def qwen(tmp_path_factory):
    """A tiny checkpoint whose chat template is TRL's training copy of Qwen2.5's (markers resized in)."""
    return chat_checkpoint(tmp_path_factory.mktemp("qwen"), _trl_template("qwen2_5_training"), resized=True)


def S(text):  # noqa: N802 - a turn
    return {"role": "system", "content": text}


def U(text):  # noqa: N802
    return {"role": "user", "content": text}


def A(text):  # noqa: N802
    return {"role": "assistant", "content": text}


MESSAGES = [{"messages": [U("w1 w5"), A("w7 w8")]},
            {"messages": [S("w3"), U("w2"), A("w9 w10 w11"), U("w3 w4"), A("w4")]},
            {"messages": [U("w6"), A("w12\nw13")]}]
PROMPT_COMPLETION = [{"prompt": [U("w1 w5")], "completion": [A("w7 w8")]},
                     {"prompt": [S("w3"), U("w2"), A("w9"), U("w4")], "completion": [A("w10 w11")]}]

# (rows, the trainer's settings): plain LM, assistant-only loss, completion-only loss on and off, truncation.
CASES = {
    "messages, every token": (MESSAGES, {}),
    "messages, assistant-only": (MESSAGES, {"assistant_only_loss": True}),
    "messages, assistant-only, truncated": (MESSAGES, {"assistant_only_loss": True, "max_length": 26}),
    "prompt-completion, completion-only (default)": (PROMPT_COMPLETION, {}),
    "prompt-completion, whole sequence": (PROMPT_COMPLETION, {"completion_only_loss": False}),
    "prompt-completion, assistant-only": (PROMPT_COMPLETION, {"assistant_only_loss": True}),
}
WHOLE = {"messages, every token", "prompt-completion, whole sequence"}


def _trl_rows(model_dir: Path, rows: list[dict], out: Path, **config) -> list[tuple[list[int], list[bool]]]:
    """Each row as TRL's SFTTrainer trains on it: its input ids, and which get a loss (the collator's labels)."""
    trl = pytest.importorskip("trl")
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer

    args = trl.SFTConfig(output_dir=str(out), report_to=[], use_cpu=True, dataset_num_proc=None, **config)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer = trl.SFTTrainer(model=AutoModelForCausalLM.from_pretrained(model_dir), args=args,
                                 train_dataset=Dataset.from_list(rows),
                                 processing_class=AutoTokenizer.from_pretrained(model_dir))
    result = []
    for ex in trainer.train_dataset:
        labels = trainer.data_collator([ex])["labels"][0].tolist()
        result.append((list(ex["input_ids"]), [label != -100 for label in labels]))
    return result


def _preview(report):
    (split,) = report.dataset.splits
    return split.mask_preview


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_marked_tokens_are_those_trl_computes_a_loss_on(name, qwen, tmp_path):
    rows, settings = CASES[name]
    expected = _trl_rows(qwen, rows, tmp_path / "out", **settings)
    assert len(expected) == len(rows)  # TRL dropped no row: they pair one to one
    data = write_jsonl(tmp_path / "data" / "train.jsonl", rows)
    preview = _preview(audit(qwen, datasets=[data], show_mask=len(rows), **settings))
    assert preview.note is None
    assert [r.row for r in preview.rows] == list(range(len(rows)))
    for row, (ids, loss) in zip(preview.rows, expected, strict=True):
        assert row.problem is None and row.length == len(ids)
        assert [t.id for t in row.tokens] == ids
        assert [t.trained for t in row.tokens] == loss
    marked = [t.trained for r in preview.rows for t in r.tokens]
    assert any(marked) and all(marked) == (name in WHOLE)  # the settings that mask something did
    assert any(r.truncated_from for r in preview.rows) == ("max_length" in settings)


def test_the_trained_tokens_are_the_assistant_answer_and_its_end(qwen, tmp_path):
    data = write_jsonl(tmp_path / "train.jsonl", MESSAGES[2:])
    (row,) = _preview(audit(qwen, datasets=[data], show_mask=1, assistant_only_loss=True)).rows
    trained = [t.text.strip() for t in row.tokens if t.trained]
    assert trained == ["w12", "w13", "<|im_end|>"]
    assert "w6" in [t.text.strip() for t in row.tokens if not t.trained]


def test_token_texts_join_to_the_decoded_text_with_multibyte_characters_and_newlines():
    """A byte-level BPE splits characters across tokens: each character shows once, with the token that
    completes it, and the texts join to the decoded row."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    from hf_vocab_audit.dataset.mask_preview import token_texts

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(["hello world"] * 20, trainers.BpeTrainer(
        vocab_size=300, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
    sample = "hello wörld\n日本語 🙂 hello"
    ids = tok.encode(sample).ids
    texts = token_texts(tok, ids)
    assert len(texts) == len(ids) and "".join(texts) == sample == tok.decode(ids)
    assert "\ufffd" not in "".join(texts) and "" in texts  # a character split across tokens shows once


def test_n_rows_and_no_more(qwen, tmp_path):
    data = write_jsonl(tmp_path / "train.jsonl", MESSAGES * 3)
    assert [r.row for r in _preview(audit(qwen, datasets=[data], show_mask=4)).rows] == [0, 1, 2, 3]
    few = write_jsonl(tmp_path / "few.jsonl", MESSAGES[:2])  # fewer rows than asked: those there are
    assert [r.row for r in _preview(audit(qwen, datasets=[few], show_mask=5)).rows] == [0, 1]


def test_no_preview_without_the_flag(qwen, tmp_path, run_cli):
    data = write_jsonl(tmp_path / "train.jsonl", MESSAGES)
    assert _preview(audit(qwen, datasets=[data])) is None
    _, out, _ = run_cli("check", str(qwen), "--dataset", str(data), "--format", "json")
    assert "mask_preview" not in json.loads(out)["dataset"]["splits"][0]
    code, out, _ = run_cli("check", str(qwen), "--dataset", str(data))
    assert code == 0 and "MASK PREVIEW" not in out


def test_the_text_report_marks_the_trained_spans_without_colour(qwen, tmp_path, run_cli):
    data = write_jsonl(tmp_path / "train.jsonl", MESSAGES[:1])
    code, out, _ = run_cli("check", str(qwen), "--dataset", str(data), "--show-mask", "1", "--assistant-only-loss")
    assert code == 0
    section = out.split("MASK PREVIEW", 1)[1]
    assert "[[...]]: tokens with a loss (label != -100)" in section and "assistant-only loss True" in section
    body = section.split("row 0 messages:", 1)[1]
    assert body.count("[[") == 1 and body.count("]]") == 1
    inside = body.split("[[", 1)[1].split("]]", 1)[0]
    assert "w7" in inside and "w8" in inside and "<|im_end|>" in inside and "w1" not in inside


def test_json_carries_the_preview_and_reads_back(qwen, tmp_path, run_cli):
    data = write_jsonl(tmp_path / "train.jsonl", MESSAGES)
    _, out, _ = run_cli("check", str(qwen), "--dataset", str(data), "--show-mask", "2", "--format", "json")
    split = json.loads(out)["dataset"]["splits"][0]
    assert [r["row"] for r in split["mask_preview"]["rows"]] == [0, 1]
    text_, id_, trained = split["mask_preview"]["rows"][0]["tokens"][0]
    assert isinstance(text_, str) and isinstance(id_, int) and trained is True  # plain LM: every token
    assert SplitSection.from_dict(split).to_dict() == split


def test_a_hostile_token_is_escaped_in_html_and_text(tmp_path):
    """Token strings are the checkpoint's and the data's: the page shows them, never runs them."""
    hostile = "<script>alert(1)</script>"
    folder = chat_checkpoint(tmp_path / "m", _trl_template("qwen2_5_training"), resized=True)
    tok = json.loads((folder / "tokenizer.json").read_text())
    rows = len(tok["model"]["vocab"]) + len(tok["added_tokens"])
    tok["added_tokens"].append({"id": rows, "content": hostile, "single_word": False, "lstrip": False,
                                "rstrip": False, "normalized": False, "special": False})
    (folder / "tokenizer.json").write_text(json.dumps(tok))
    data = write_jsonl(tmp_path / "train.jsonl", [{"messages": [U("w1"), A(f"w2 {hostile} \x1b[31mred")]}])
    report = run_gate(str(folder), datasets=[str(data)], show_mask=1, select=["HVA5"], exit_zero=True).report
    (row,) = _preview(report).rows
    assert any(t.text.strip() == hostile for t in row.tokens)  # one token: the added one
    page = html.render(report)
    assert hostile not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "\x1b" not in text.render(report, color=False)


def test_the_preview_is_capped_and_refused_past_the_cap(qwen, tmp_path, run_cli):
    data = write_jsonl(tmp_path / "train.jsonl", MESSAGES)
    code, _, err = run_cli("check", str(qwen), "--dataset", str(data), "--show-mask", str(MAX_PREVIEW_ROWS + 1))
    assert code == 2 and "--show-mask" in err and len(err.strip().splitlines()) == 1
    code, _, err = run_cli("check", str(qwen), "--show-mask", "2")
    assert code == 2 and "needs --dataset" in err


def test_a_long_row_shows_its_first_tokens(qwen, tmp_path):
    from hf_vocab_audit.core.sections import MAX_PREVIEW_TOKENS

    long = [{"messages": [U("w1 " * (MAX_PREVIEW_TOKENS + 50)), A("w2")]}]
    data = write_jsonl(tmp_path / "train.jsonl", long)
    (row,) = _preview(audit(qwen, datasets=[data], show_mask=1)).rows
    assert len(row.tokens) == MAX_PREVIEW_TOKENS and row.length > MAX_PREVIEW_TOKENS


def test_the_targets_own_settings_cannot_ask_for_a_preview(qwen, tmp_path):
    """``show-mask`` is the operator's: a checkpoint's hf-vocab-audit.toml naming it is not obeyed (HVA003)."""
    import shutil

    folder = tmp_path / "m"
    shutil.copytree(qwen, folder)
    (folder / "hf-vocab-audit.toml").write_text("show-mask = 3\n", encoding="utf-8")
    data = write_jsonl(tmp_path / "train.jsonl", MESSAGES)
    report = run_gate(str(folder), datasets=[str(data)], exit_zero=True).report
    assert _preview(report) is None
    assert any(f.code == "HVA003" and "show-mask" in f.message for f in report.findings)


def test_a_split_that_is_not_chat_says_why_it_has_no_preview(qwen, tmp_path):
    data = write_jsonl(tmp_path / "train.jsonl", [{"input_ids": [1, 2, 3]}])
    preview = _preview(audit(qwen, datasets=[data], show_mask=2))
    assert preview.rows == () and "not one of TRL's" in preview.note


def test_a_row_the_template_refuses_shows_the_templates_message(tmp_path):
    from chat_builders import CHATML_GEN

    folder = chat_checkpoint(tmp_path / "m", CHATML_GEN, resized=True)
    data = write_jsonl(tmp_path / "train.jsonl", [{"messages": [U("w1"), S("w2"), A("w3")]}, MESSAGES[0]])
    first, second = _preview(audit(folder, datasets=[data], show_mask=2)).rows
    assert first.tokens == () and "System message must be first" in first.problem
    assert second.problem is None and second.tokens


def test_assistant_only_loss_without_a_generation_block_has_no_preview_and_says_why(tmp_path):
    """TRL's masks would all be empty: no token is trained, so the preview says that instead of rows."""
    from chat_builders import CHATML

    folder = chat_checkpoint(tmp_path / "m", CHATML, resized=True)
    data = write_jsonl(tmp_path / "train.jsonl", MESSAGES)
    preview = _preview(audit(folder, datasets=[data], show_mask=2, assistant_only_loss=True))
    assert preview.rows == () and "{% generation %}" in preview.note
    assert _preview(audit(folder, datasets=[data], show_mask=2)).rows  # without the setting: every token


def test_a_first_batch_smaller_than_n_is_said(qwen, tmp_path):
    data = write_jsonl(tmp_path / "train.jsonl", MESSAGES)
    preview = _preview(audit(qwen, datasets=[data], show_mask=3, batch_size=2))
    assert [r.row for r in preview.rows] == [0, 1] and "--batch-size" in preview.note
