"""HVA580: the data uses a token whose untrained row a PEFT adapter leaves frozen. Whether the row is frozen is
decided by peft itself: one optimizer step on a batch that holds the token, the row compared before and after."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from weights_builders import llama_with_rows

from hf_vocab_audit import audit

TOKEN = "<|im_start|>"
TOKEN_ID = 100  # the first token added after the 100 base tokens


def _rows(peft_model, token_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The token's input row as the model reads it (through any peft wrapper) and its lm_head logit weights."""
    with torch.no_grad():
        inp = peft_model.get_input_embeddings()(torch.tensor([token_id]))[0].clone()
        hidden = torch.eye(peft_model.config.hidden_size)
        out = peft_model.get_output_embeddings()(hidden)[:, token_id].clone()
    return inp, out


def train_step(base: Path, adapter_dir: Path, **lora) -> tuple[bool, bool]:
    """Save a LoRA adapter of ``base`` after one AdamW step on a batch holding the token: whether the token's
    input row and lm_head row changed."""
    import transformers as T
    from peft import LoraConfig, get_peft_model

    torch.manual_seed(0)
    model = T.AutoModelForCausalLM.from_pretrained(base)
    peft_model = get_peft_model(model, LoraConfig(r=2, target_modules=lora.pop("target_modules", ["q_proj", "v_proj"]),
                                                  **lora))
    before = _rows(peft_model, TOKEN_ID)
    ids = torch.tensor([[1, TOKEN_ID, 5, 6, 2]])
    opt = torch.optim.AdamW([p for p in peft_model.parameters() if p.requires_grad], lr=1e-2)
    peft_model(input_ids=ids, labels=ids).loss.backward()
    opt.step()
    after = _rows(peft_model, TOKEN_ID)
    peft_model.save_pretrained(adapter_dir)
    return not torch.equal(before[0], after[0]), not torch.equal(before[1], after[1])


@pytest.fixture(scope="module")
def tied(tmp_path_factory) -> Path:
    return llama_with_rows(tmp_path_factory.mktemp("tied"), zero=[TOKEN], tied=True)


@pytest.fixture(scope="module")
def untied(tmp_path_factory) -> Path:
    return llama_with_rows(tmp_path_factory.mktemp("untied"), zero=[TOKEN], tied=False)


def _jsonl(path: Path, rows: list[dict]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> str:
    """input_ids that use the token three times, first in row 1 at position 1."""
    folder = tmp_path_factory.mktemp("data")
    return _jsonl(folder / "uses.jsonl", [{"input_ids": [1, 5, 6, 2]}, {"input_ids": [1, TOKEN_ID, 7, 2]},
                                          {"input_ids": [1, 8, TOKEN_ID, TOKEN_ID, 2]}])


@pytest.fixture(scope="module")
def clean(tmp_path_factory) -> str:
    folder = tmp_path_factory.mktemp("clean")
    return _jsonl(folder / "clean.jsonl", [{"input_ids": [1, 5, 6, 2]}, {"input_ids": [1, 7, 2]}])


def frozen_findings(adapter_dir: Path, base: Path, dataset: str):
    report = audit(adapter_dir, base=base, weights=True, datasets=[dataset])
    return [f for f in report.findings if f.code == "HVA580"], report


def test_plain_lora_leaves_the_untrained_row_frozen_and_the_data_uses_it(tied, data, tmp_path):
    changed = train_step(tied, tmp_path / "a")
    assert changed == (False, False)  # peft never updates the zero row: the NaN recipe of unsloth #1258
    found, report = frozen_findings(tmp_path / "a", tied, data)
    assert len(found) == 1 and report.exit_code() == 1
    f = found[0]
    assert f.severity.value == "error" and f.location.token_id == TOKEN_ID and f.location.token == TOKEN
    assert (f.location.split, f.location.column, f.location.row, f.location.position) == ("train", "input_ids", 1, 1)
    assert f.details["uses"] == 3 and set(f.details["sides"]) == {"input"}
    assert "is used 3 time(s)" in f.message and "input embedding row is all zero" in f.message
    assert "modules_to_save none" in f.message
    assert any(g.code == "HVA601" for g in report.findings)  # the row itself is still HVA601's warning


def test_quiet_when_the_data_never_uses_the_token(tied, clean, tmp_path):
    assert train_step(tied, tmp_path / "a") == (False, False)
    found, report = frozen_findings(tmp_path / "a", tied, clean)
    assert found == [] and "HVA580" in report.rules_run and report.exit_code() == 0


@pytest.mark.parametrize("lora", [{"modules_to_save": ["embed_tokens"]}, {"trainable_token_indices": [TOKEN_ID]},
                                  {"target_modules": ["q_proj", "v_proj", "embed_tokens"]},
                                  {"target_modules": r".*\.(q_proj|v_proj|embed_tokens)"}],
                         ids=["modules_to_save", "trainable_token_indices", "lora-on-embeddings", "lora-pattern"])
def test_quiet_when_the_adapter_trains_the_row(tied, data, tmp_path, lora):
    changed = train_step(tied, tmp_path / "a", **lora)
    assert changed[0]  # the tied row does train
    found, report = frozen_findings(tmp_path / "a", tied, data)
    assert found == [] and "HVA580" in report.rules_run


def test_untied_lm_head_stays_frozen_when_only_the_embedding_is_saved(untied, data, tmp_path):
    changed = train_step(untied, tmp_path / "a", modules_to_save=["embed_tokens"])
    assert changed == (True, False)  # the input row trains; the untied lm_head row does not
    found, _ = frozen_findings(tmp_path / "a", untied, data)
    assert len(found) == 1 and set(found[0].details["sides"]) == {"output"}
    assert "its lm_head row is all zero" in found[0].message


def test_untied_quiet_when_both_matrices_are_saved(untied, data, tmp_path):
    assert train_step(untied, tmp_path / "a", modules_to_save=["embed_tokens", "lm_head"]) == (True, True)
    found, _ = frozen_findings(tmp_path / "a", untied, data)
    assert found == []


def test_full_fine_tune_is_not_checked(tied, data):
    """No adapter: every row trains (the NaN risk of the zero row itself is HVA601's warning)."""
    report = audit(tied, weights=True, datasets=[data])
    assert not any(f.code == "HVA580" for f in report.findings)
    assert any(f.code == "HVA601" for f in report.findings)


def test_tokenized_text_that_uses_the_token(tied, tmp_path):
    train_step(tied, tmp_path / "a")
    text = _jsonl(tmp_path / "text.jsonl", [{"text": "hello"}, {"text": f"{TOKEN}user hi"}])
    found, _ = frozen_findings(tmp_path / "a", tied, text)
    assert len(found) == 1 and found[0].location.column == "text" and found[0].location.row == 1


def test_ignored_rule_watches_nothing(tied, data, tmp_path):
    train_step(tied, tmp_path / "a")
    report = audit(tmp_path / "a", base=tied, weights=True, datasets=[data], ignore=["HVA580"])
    assert "HVA580" not in report.rules_run and not any(f.code == "HVA580" for f in report.findings)


def test_cli_exit_code(tied, data, tmp_path):
    train_step(tied, tmp_path / "a")
    proc = subprocess.run([sys.executable, "-m", "hf_vocab_audit", "check", str(tmp_path / "a"), "--base", str(tied),
                           "--weights", "--dataset", data], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "HVA580" in proc.stdout


def test_chat_rows_rendered_through_the_template(tied, tmp_path):
    """Conversations: the template writes the marker the data never spells out; the rendered ids use it."""
    train_step(tied, tmp_path / "a")
    chats = _jsonl(tmp_path / "chat.jsonl", [{"messages": [{"role": "user", "content": "hi"},
                                                           {"role": "assistant", "content": "hello"}]}])
    found, _ = frozen_findings(tmp_path / "a", tied, chats)
    assert len(found) == 1 and found[0].location.column == "messages" and found[0].location.row == 0
    assert found[0].details["uses"] == 2  # one <|im_start|> per turn


def test_quiet_on_a_healthy_base(tmp_path, data):
    """No untrained row: the new tokens' rows were initialised like the trained ones (not zero, not the mean)."""
    base = llama_with_rows(tmp_path / "base", tied=True)
    train_step(base, tmp_path / "a")
    found, report = frozen_findings(tmp_path / "a", base, data)
    assert found == [] and "HVA580" in report.rules_run and report.exit_code() == 0


@pytest.mark.parametrize("pattern", ["(e|em|embed_tokens|.)*+$x", "(a+)+$", r"(.*)\1", ".*.*.*.*x", "[", "x" * 400])
def test_untamed_patterns_are_never_run(pattern):
    """A target_modules pattern from an untrusted config: run only when it cannot backtrack for long."""
    from hf_vocab_audit.facts.trainable_rows import tame_pattern

    assert not tame_pattern(pattern)


def test_tame_patterns_are_run_as_peft_runs_them():
    import re

    from hf_vocab_audit.facts.trainable_rows import tame_pattern

    for pattern in (r".*\.(q_proj|v_proj|embed_tokens)", r"model.*(embed_tokens|q_proj)", "embed_tokens"):
        assert tame_pattern(pattern)
        assert bool(re.fullmatch(pattern, "model.embed_tokens")) == (pattern != "embed_tokens")


def test_hostile_configs_fail_with_the_frozen_rows(tmp_path):
    """The catalogue's `frozen rows` cases exit 1; here: because of HVA580 on the rows the config tried to cover."""
    from hostile_frozen import adapter_names_that_match_everything
    from malformed import tiny_checkpoint

    folder = tiny_checkpoint(tmp_path / "model")
    args = adapter_names_that_match_everything(folder)
    report = audit(args[0], weights=True, datasets=[args[-1]])
    found = {f.location.token_id: f for f in report.findings if f.code == "HVA580"}
    assert set(found) == {1, 2, 4, 5} and report.exit_code() == 1
    assert all(set(f.details["sides"]) == {"input", "output"} for f in found.values())


def test_pad_positions_are_not_uses(tmp_path):
    """pad's row is zero by design and its positions are masked: a padded dataset does not report it."""
    from hostile_frozen import _adapter
    from malformed import tiny_checkpoint

    folder = tiny_checkpoint(tmp_path / "model")  # every row zero; pad is <pad> (3)
    adapter = _adapter(folder, target_modules=["q_proj"])
    data = _jsonl(tmp_path / "padded.jsonl", [{"input_ids": [1, 4, 2, 3, 3]}])
    report = audit(adapter, weights=True, datasets=[data])
    assert {f.location.token_id for f in report.findings if f.code == "HVA580"} == {1, 2, 4}


def test_uses_add_up_over_splits_and_the_first_is_named(tied, tmp_path):
    train_step(tied, tmp_path / "a")
    folder = tmp_path / "data"
    folder.mkdir()
    _jsonl(folder / "train.jsonl", [{"input_ids": [1, 5, 2]}, {"input_ids": [1, TOKEN_ID, 2]}])
    _jsonl(folder / "validation.jsonl", [{"input_ids": [TOKEN_ID, TOKEN_ID, 2]}])
    found, _ = frozen_findings(tmp_path / "a", tied, str(folder))
    assert len(found) == 1 and found[0].details["uses"] == 3
    assert (found[0].location.split, found[0].location.row, found[0].location.position) == ("train", 1, 1)


def test_the_kernel_counts_only_watched_ids():
    import pyarrow as pa

    from hf_vocab_audit.dataset.checks import INPUT_IDS, WATCHED
    from hf_vocab_audit.dataset.kernel import summarize
    from hf_vocab_audit.dataset.summary import ColumnRole, ScanContext
    from hf_vocab_audit.facts.limits import InputLimits

    batch = pa.table({"input_ids": [[1, 7, 7, 2], [9, 3], [7]]})
    ctx = ScanContext("d", "train", (ColumnRole("input_ids", INPUT_IDS),), InputLimits(), watch=(3, 7))
    v = summarize(batch, 10, ctx).violations[("d", "train", "input_ids", WATCHED)]
    assert (v.values, v.rows, v.top) == (4, 3, {7: 3, 3: 1})
    assert v.locations[0] == (10, 1, 7) and (11, 1, 3) in v.locations
    unwatched = summarize(batch, 0, ScanContext("d", "train", ctx.columns, InputLimits()))
    assert not any(key[3] == WATCHED for key in unwatched.violations)
