"""Chat and instruction splits: every verdict is decided by running TRL's own dataset preparation and one loss
step of a tiny model on CPU (the scan imports trl only under assistant-only loss: test_chat_assistant_only.py)."""

from __future__ import annotations

import json

import chat_builders
import pytest
from chat_builders import trl_outcome
from dataset_builders import write_jsonl

from hf_vocab_audit import audit
from hf_vocab_audit.dataset.chat_formats import detect
from hf_vocab_audit.dataset.chat_render import ChatSettings, prepare
from hf_vocab_audit.dataset.chat_settings import renderer_for
from hf_vocab_audit.facts import gather

pytest.importorskip("trl")


@pytest.fixture(scope="module")
def chat_models(tmp_path_factory):
    return chat_builders.chat_models(tmp_path_factory.mktemp("chat_models"))


def U(text):  # noqa: N802 - a turn
    return {"role": "user", "content": text}


def A(text):  # noqa: N802
    return {"role": "assistant", "content": text}


TOOLS = [{"type": "function", "function": {"name": "w42", "description": "d", "parameters": {"type": "object"}}}]

# format name -> (trainer, rows): each a healthy instance of one of TRL's formats.
FORMATS = {
    "messages": ("sft", [{"messages": [U("w1 w5"), A("w7 w8")]}, {"messages": [U("w2"), A("w9"), U("w3"), A("w4")]}]),
    "messages+tools": ("sft", [{"messages": [U("w1"), A("w7")], "tools": TOOLS}] * 2),
    "prompt-completion turns": ("sft", [{"prompt": [U("w1 w5")], "completion": [A("w7 w8")]},
                                        {"prompt": [U("w2")], "completion": [A("w9")]}]),
    "prompt-completion strings": ("sft", [{"prompt": "w1 w5", "completion": " w7 w8"},
                                          {"prompt": "w2", "completion": " w9"}]),
    "preference turns": ("dpo", [{"prompt": [U("w1 w5")], "chosen": [A("w7 w8")], "rejected": [A("w9")]}] * 2),
    "preference implicit prompt": ("dpo", [{"chosen": [U("w1"), A("w7 w8")], "rejected": [U("w1"), A("w9")]}] * 2),
    "preference strings": ("dpo", [{"prompt": "w1 w5", "chosen": " w7", "rejected": " w9"}] * 2),
    "unpaired preference": ("kto", [{"prompt": "w1 w5", "completion": " w7 w8", "label": True},
                                    {"prompt": "w1 w5", "completion": " w9", "label": False}]),
    "unpaired preference turns": ("kto", [{"prompt": [U("w1")], "completion": [A("w7")], "label": True},
                                          {"prompt": [U("w2")], "completion": [A("w9")], "label": False}]),
}


def _codes(report, prefix="HVA5"):
    return sorted({f.code for f in report.findings if f.code.startswith(prefix)})


def _scan(model, rows, tmp_path, **kwargs):
    data = write_jsonl(tmp_path / "data" / "train.jsonl", rows)
    return audit(model, datasets=[data], select=["HVA5"], **kwargs)


def _with_marker(rows):
    """String rows carry a marker in the prompt text (tokenized as the added token): turn rows get theirs
    from the template."""
    return [{**r, "prompt": "<|im_start|>" + r["prompt"]} if isinstance(r.get("prompt"), str) else r for r in rows]


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_each_format_healthy_and_broken_as_trl_runs_it(name, chat_models, tmp_path):
    trainer, rows = FORMATS[name]
    rows = _with_marker(rows)
    good = trl_outcome(chat_models["good"], rows, trainer, tmp_path / "out")
    bad = trl_outcome(chat_models["bad"], rows, trainer, tmp_path / "out")
    assert good["stage"] == "ok", good["error"]
    assert bad["stage"] == "forward" and "index out of range" in bad["error"]  # the markers have no rows
    assert _codes(_scan(chat_models["good"], rows, tmp_path)) == []
    report = _scan(chat_models["bad"], rows, tmp_path)
    assert _codes(report) == ["HVA501"]
    hit = next(f for f in report.findings if f.code == "HVA501")
    assert hit.location.split == "train" and hit.location.row == 0 and hit.location.token in ("<|im_start|>",
                                                                                               "<|im_end|>")
    split = report.to_dict()["dataset"]["splits"][0]
    assert split["format"].startswith(detect_kind(name))


def detect_kind(name):
    return {"messages": "language-modeling", "prompt-completion": "prompt-completion", "preference": "preference",
            "unpaired": "unpaired-preference"}[name.split(" ")[0].split("+")[0]]


def _trl_sequences(trainer, ds):
    """The token ids TRL trains on, per row (and which get a loss), from its prepared dataset."""
    out = []
    for ex in ds:
        if trainer == "sft":
            out.append({"ids": ex["input_ids"], "loss": [lab != -100 for lab in ex["labels"]]})
        elif trainer == "dpo":
            out.append({"chosen": ex["prompt_ids"] + ex["chosen_ids"], "rejected": ex["prompt_ids"] + ex["rejected_ids"]})
        else:
            out.append({"ids": ex["prompt_ids"] + ex["completion_ids"]})
    return out


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_rendered_ids_are_the_ids_trl_trains_on(name, chat_models, tmp_path):
    """The scan's rendering (transformers' renderer, the backend tokenizer, TRL's eos and masks) gives the same
    ids, and the same tokens with a loss, as TRL's preparation."""
    import pyarrow as pa

    trainer, rows = FORMATS[name]
    expected = _trl_sequences(trainer, trl_outcome(chat_models["good"], rows, trainer, tmp_path / "out")["dataset"])
    facts = gather(chat_models["good"])
    fmt = detect(pa.Table.from_pylist(rows).schema)
    renderer = renderer_for(fmt, facts, ChatSettings())
    backend = facts.tokenizer.backend
    backend.no_padding()
    backend.no_truncation()
    got = prepare(renderer, pa.Table.from_pylist(rows).to_pylist(), backend)
    for row, want in zip(got, expected, strict=True):
        assert row.error is None
        if trainer == "dpo":
            assert {k: s.ids for k, s in row.sequences.items()} == want
        else:
            (seq,) = row.sequences.values()
            assert seq.ids == want["ids"]
            if "loss" in want:
                assert seq.labels_mask == want["loss"]


def test_the_template_refusing_a_row(chat_models, tmp_path):
    rows = [{"messages": [U("w1"), A("w2")]}, {"messages": [U("w1"), {"role": "system", "content": "w3"}, A("w2")]}]
    trl = trl_outcome(chat_models["good"], rows, "sft", tmp_path / "out")
    assert trl["stage"] == "prepare" and "System message must be first" in trl["error"]
    report = _scan(chat_models["good"], rows, tmp_path)
    assert _codes(report) == ["HVA550"]
    (hit,) = report.findings
    assert hit.location.row == 1 and "System message must be first" in hit.message
    assert _codes(_scan(chat_models["good"], rows[:1], tmp_path)) == []


def test_assistant_only_loss_without_a_generation_block(chat_models, tmp_path):
    rows = FORMATS["messages"][1]
    trl = trl_outcome(chat_models["plain"], rows, "sft", tmp_path / "out", assistant_only_loss=True)
    assert trl["stage"] == "prepare" and "not training-compatible" in trl["error"]
    report = _scan(chat_models["plain"], rows, tmp_path, assistant_only_loss=True)
    assert _codes(report) == ["HVA551"]
    assert "{% generation %}" in report.findings[0].message
    assert report.to_dict()["dataset"]["splits"][0]["columns"]["messages"]["tokens"] > 0  # the ids are still checked
    assert trl_outcome(chat_models["good"], rows, "sft", tmp_path / "out", assistant_only_loss=True)["stage"] == "ok"
    assert _codes(_scan(chat_models["good"], rows, tmp_path, assistant_only_loss=True)) == []


def test_a_row_without_assistant_tokens_under_assistant_only_loss(chat_models, tmp_path):
    rows = [{"messages": [U("w1"), A("w2")]}, {"messages": [U("w1")]}]
    trl = trl_outcome(chat_models["good"], rows, "sft", tmp_path / "out", assistant_only_loss=True)
    assert trl["stage"] == "prepare" and "no assistant tokens" in trl["error"]
    report = _scan(chat_models["good"], rows, tmp_path, assistant_only_loss=True)
    assert _codes(report) == ["HVA551"] and report.findings[0].location.row == 1


def test_truncation_that_cuts_the_whole_completion(chat_models, tmp_path):
    rows = [{"prompt": [U("w1 w2 w3 w4 w5 w6 w7 w8")], "completion": [A("w9")]},
            {"prompt": [U("w1")], "completion": [A("w9")]}]
    trl = trl_outcome(chat_models["good"], rows, "sft", tmp_path / "out", max_length=8)
    assert trl["stage"] == "ok" and len(trl["dataset"]) == 1  # TRL dropped row 0
    report = _scan(chat_models["good"], rows, tmp_path, max_length=8)
    dropped = [f for f in report.findings if f.code == "HVA552"]
    assert [f.location.row for f in dropped] == [0]
    assert trl_outcome(chat_models["good"], rows, "sft", tmp_path / "out", max_length=64)["dataset"].num_rows == 2
    assert "HVA552" not in _codes(_scan(chat_models["good"], rows, tmp_path, max_length=64))


def test_trl_config_beside_the_data_sets_max_length(chat_models, tmp_path):
    rows = [{"prompt": [U("w1 w2 w3 w4 w5 w6 w7 w8")], "completion": [A("w9")]}]
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "sft_config.json").write_text(json.dumps({"max_length": 8, "packing": False}))
    report = _scan(chat_models["good"], rows, tmp_path)
    assert "HVA552" in _codes(report)
    assert "sft_config.json" in report.to_dict()["dataset"]["splits"][0]["chat_settings"]
    (tmp_path / "data" / "sft_config.json").write_text("max_length: 8\npacking: true\n")  # packing: no truncation
    (tmp_path / "data" / "sft_config.json").rename(tmp_path / "data" / "sft_config.yaml")
    assert "HVA552" not in _codes(_scan(chat_models["good"], rows, tmp_path))


def test_prompt_that_is_not_a_prefix(chat_models, tmp_path):
    """A string prompt that ends inside a word: its last token merges with the completion's first."""
    from transformers import AutoTokenizer

    rows = [{"prompt": "w1 w", "completion": "5 w7", "label": True}, {"prompt": "w1", "completion": " w7", "label": True}]
    trl = trl_outcome(chat_models["good"], rows, "kto", tmp_path / "out")
    tok = AutoTokenizer.from_pretrained(chat_models["good"])
    cut = [len(tok(r["prompt"])["input_ids"]) > len(ex["prompt_ids"]) for r, ex in zip(rows, trl["dataset"])]
    assert cut == [True, False]  # TRL left the end of row 0's prompt out
    report = _scan(chat_models["good"], rows, tmp_path)
    assert [f.location.row for f in report.findings if f.code == "HVA553"] == [0]


def test_end_of_turn_outside_the_generation_block(chat_models, tmp_path):
    rows = FORMATS["messages"][1]
    for key, trained in (("open_end", False), ("good", True)):
        prepared = trl_outcome(chat_models[key], rows, "sft", tmp_path / "out", assistant_only_loss=True)["dataset"]
        learned = [[i for i, lab in zip(ex["input_ids"], ex["labels"]) if lab != -100] for ex in prepared]
        assert all((105 in ids) is trained for ids in learned)  # <|im_end|> gets a loss or not
        report = _scan(chat_models[key], rows, tmp_path, assistant_only_loss=True)
        assert ("HVA554" in _codes(report)) is not trained


@pytest.mark.parametrize("kind", ["Dataset", "DatasetDict", "IterableDataset", "IterableDatasetDict"])
def test_live_datasets_objects_give_the_findings_of_the_same_data_on_disk(kind, chat_models, tmp_path):
    from datasets import Dataset, DatasetDict, IterableDatasetDict

    rows = [{"messages": [U(f"w{i % 50}"), A("w7")]} for i in range(30)]
    rows[17] = {"messages": [U("w1"), {"role": "system", "content": "w3"}, A("w2")]}
    on_disk = _scan(chat_models["bad"], rows, tmp_path, batch_size=8)
    ds = Dataset.from_list(rows)
    obj = {"Dataset": ds, "DatasetDict": DatasetDict({"train": ds}), "IterableDataset": ds.to_iterable_dataset(),
           "IterableDatasetDict": IterableDatasetDict({"train": ds.to_iterable_dataset()})}[kind]
    live = audit(chat_models["bad"], datasets=[obj], select=["HVA5"], batch_size=8)

    def key(report):
        return sorted((f.code, f.location.split, f.location.row, f.location.position, f.location.token,
                       f.message.split(": ", 1)[1]) for f in report.findings)

    assert key(live) == key(on_disk) and {f.code for f in live.findings} == {"HVA501", "HVA550"}
    if kind == "Dataset":  # one object rather than a list
        assert key(audit(chat_models["bad"], datasets=ds, select=["HVA5"], batch_size=8)) == key(on_disk)


def test_tool_calls_that_datasets_reads_as_json_values(chat_models, tmp_path):
    """Turns whose fields vary in shape (tool calls with arguments) become ``datasets``' Json feature when
    the JSON builder reads them: the scan decodes them as the trainer gets them."""
    import datasets

    call = {"type": "function", "function": {"name": "w42", "arguments": {"x": 1}}}
    rows = [{"messages": [U("w1"), {"role": "assistant", "content": "w7", "tool_calls": [call]}], "tools": TOOLS},
            {"messages": [U("w2"), A("w9")], "tools": TOOLS}]
    data = write_jsonl(tmp_path / "data" / "train.jsonl", rows)
    loaded = datasets.load_dataset("json", data_files={"train": str(data)})["train"]
    assert "Json" in str(loaded.features["messages"])
    good = trl_outcome(chat_models["good"], list(loaded), "sft", tmp_path / "out")
    bad = trl_outcome(chat_models["bad"], list(loaded), "sft", tmp_path / "out")
    assert good["stage"] == "ok" and bad["stage"] == "forward"
    # The template renders an assistant turn's content only: the call's arguments never reach the model (HVA556).
    from transformers import AutoTokenizer

    text = AutoTokenizer.from_pretrained(chat_models["good"]).apply_chat_template(rows[0]["messages"], tokenize=False,
                                                                                   tools=TOOLS)
    assert '"x"' not in text and "x" not in text.replace("<|im_start|>", "")
    assert _codes(audit(chat_models["good"], datasets=[data], select=["HVA5"])) == ["HVA556"]
    report = audit(chat_models["bad"], datasets=[data], select=["HVA5"])
    assert _codes(report) == ["HVA501", "HVA556"] and report.to_dict()["dataset"]["splits"][0]["rows"] == 2


def test_a_streaming_dataset_is_consumed_once_batch_by_batch(chat_models):
    from datasets import IterableDataset

    calls = []

    def rows():
        calls.append(1)
        for i in range(25):
            yield {"messages": [U(f"w{i}"), A("w7")]}

    report = audit(chat_models["bad"], datasets=[IterableDataset.from_generator(rows)], select=["HVA5"], batch_size=4)
    assert len(calls) == 1
    assert report.to_dict()["dataset"]["splits"][0]["rows"] == 25 and _codes(report) == ["HVA501"]


def test_rows_with_tools_use_the_named_tool_use_template(tmp_path):
    """A tokenizer with named templates: transformers (and so TRL) renders rows that have tools with
    ``tool_use``; here only that template writes the markers, so only rows with tools reach ids 104/105."""
    from builders import make_model, new_tokenizer
    from chat_builders import CHATML_GEN, MARKERS

    plain = "{% for m in messages %}{{ m['role'] }} {{ m['content'] }}{{ eos_token }}{% endfor %}"
    folder = tmp_path / "named"
    make_model(folder, "llama", 104)
    tok = new_tokenizer(104, added_special=MARKERS)
    tok.chat_template = {"default": plain, "tool_use": CHATML_GEN}
    tok.save_pretrained(folder)
    with_tools = [{"messages": [U("w1"), A("w7")], "tools": TOOLS}] * 2
    without = [{"messages": [U("w1"), A("w7")]}] * 2
    assert trl_outcome(folder, with_tools, "sft", tmp_path / "out")["stage"] == "forward"
    assert trl_outcome(folder, without, "sft", tmp_path / "out")["stage"] == "ok"
    assert _codes(_scan(folder, with_tools, tmp_path)) == ["HVA501"]
    assert _codes(_scan(folder, without, tmp_path)) == []
