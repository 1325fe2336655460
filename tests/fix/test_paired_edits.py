"""``check FT --base BASE --fix``: what a fine-tune lost against its base, given back from the base.

Every fine-tune is made with transformers' own classes from a padded base (128 rows for 100 tokens, as Qwen and
Gemma pad); what each fix claims is shown by loading the output back on CPU: the regrown rows are the base's bit
for bit, the kept rows the fine-tune's, the model runs on the ids it got back, and the audit against the base no
longer reports what was fixed. The input folders are hashed before and after (``guard_input``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from builders import edit_json, make_tokenizer
from safetensors.torch import load_file

from hf_vocab_audit import audit

TEMPLATE = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
MATRICES = ("model.embed_tokens.weight", "lm_head.weight")


def _config(rows: int = 128, *, tied: bool = False, hidden: int = 16):
    from transformers import LlamaConfig

    return LlamaConfig(vocab_size=rows, hidden_size=hidden, intermediate_size=32, num_hidden_layers=1,
                       num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=128,
                       bos_token_id=1, eos_token_id=2, pad_token_id=3, tie_word_embeddings=tied)


def _base(folder: Path, *, tied: bool = False) -> Path:
    from transformers import LlamaForCausalLM

    make_tokenizer(folder, 100, chat_template=TEMPLATE)
    torch.manual_seed(0)
    LlamaForCausalLM(_config(tied=tied)).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return _base(tmp_path_factory.mktemp("base"))


@pytest.fixture(scope="module")
def tied_base(tmp_path_factory):
    return _base(tmp_path_factory.mktemp("tied"), tied=True)


def fine_tune(base: Path, folder: Path, *, resize: int | None = None) -> Path:
    """The base loaded, resized to ``resize`` (``resize_token_embeddings``, as a training script does), one step of
    "training" on every row it kept, saved with the base's tokenizer."""
    from transformers import AutoTokenizer, LlamaForCausalLM

    model = LlamaForCausalLM.from_pretrained(base)
    if resize is not None:
        model.resize_token_embeddings(resize, mean_resizing=False)
    with torch.no_grad():
        model.get_input_embeddings().weight.add_(0.5)
        if not model.config.tie_word_embeddings:
            model.get_output_embeddings().weight.add_(0.25)
    model.save_pretrained(folder)
    AutoTokenizer.from_pretrained(base).save_pretrained(folder)
    return folder


def fix(run_cli, ft: Path, base: Path, out: Path, *extra: str) -> dict:
    code, stdout, err = run_cli("check", ft, "--base", base, "--fix", "--output", out, "--format", "json", *extra)
    assert code in (0, 1), err
    return json.loads(stdout)


def fixed(report: dict) -> list[tuple[str, str]]:
    return [(f["code"], f["applicability"]) for f in report["fixes"]]


def unfixed(report: dict, code: str) -> list[str]:
    return [u["reason"] for u in report["fix"]["unfixed"] if u["code"] == code]


def pair_codes(folder: Path, base: Path) -> set[str]:
    return {f.code for f in audit(folder, base=str(base)).findings if f.code.startswith("HVA84")}


def test_padding_rows_cut_are_copied_back_bit_for_bit(base, tmp_path, guard_input, run_cli):
    from transformers import LlamaForCausalLM

    ft = guard_input(fine_tune(base, tmp_path / "ft", resize=100))
    guard_input(base)
    assert pair_codes(ft, base) == {"HVA846"}
    with pytest.raises(RuntimeError, match="ignore_mismatched_sizes"):  # HVA846: the base's shape is gone
        LlamaForCausalLM.from_pretrained(ft, config=_config())
    report = fix(run_cli, ft, base, tmp_path / "out")
    assert fixed(report) == [("HVA846", "safe"), ("HVA846", "safe")]
    assert report["fix"]["method"] == "surgical"
    assert {g["name"]: (g["old"], g["new"], g["fill"]) for g in report["fix"]["verification"]["grown"]} == {
        name: (100, 128, "base") for name in MATRICES}
    out, theirs, ours = (load_file(str(f / "model.safetensors")) for f in (tmp_path / "out", base, ft))
    for name in MATRICES:
        assert out[name].shape == (128, 16)
        assert torch.equal(out[name][:100], ours[name])  # the fine-tune's rows kept
        assert torch.equal(out[name][100:], theirs[name][100:])  # the cut rows are the base's, bit for bit
        assert not torch.equal(ours[name], theirs[name][:100])  # (they were trained: the copy is not the base)
    assert json.loads((tmp_path / "out" / "config.json").read_text())["vocab_size"] == 128
    model = LlamaForCausalLM.from_pretrained(tmp_path / "out", config=_config())  # the base's config loads it
    assert model(torch.arange(128).unsqueeze(0)).logits.shape == (1, 128, 128)  # every id given back has a row
    assert pair_codes(tmp_path / "out", base) == set()


def test_a_tied_fine_tune_gets_its_one_matrix_back(tied_base, tmp_path, guard_input, run_cli):
    from transformers import LlamaForCausalLM

    ft = guard_input(fine_tune(tied_base, tmp_path / "ft", resize=100))
    assert set(load_file(str(ft / "model.safetensors"))) & set(MATRICES) == {MATRICES[0]}  # lm_head is not stored
    report = fix(run_cli, ft, tied_base, tmp_path / "out")
    assert fixed(report) == [("HVA846", "safe")]
    out = load_file(str(tmp_path / "out" / "model.safetensors"))[MATRICES[0]]
    assert torch.equal(out[100:], load_file(str(tied_base / "model.safetensors"))[MATRICES[0]][100:])
    model = LlamaForCausalLM.from_pretrained(tmp_path / "out")
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()  # still tied
    assert torch.equal(model.lm_head.weight.detach(), out)
    assert pair_codes(tmp_path / "out", tied_base) == set()


def test_token_rows_cut_from_a_model_whose_tokenizer_still_emits_them(base, tmp_path, guard_input, run_cli):
    from transformers import AutoModelForCausalLM

    ft = guard_input(fine_tune(base, tmp_path / "ft", resize=96))
    assert {"HVA840"} == pair_codes(ft, base)
    with pytest.raises(IndexError):  # token 97 of its own tokenizer has no row: the CPU face of the CUDA assert
        AutoModelForCausalLM.from_pretrained(ft)(torch.tensor([[1, 97]]))
    report = fix(run_cli, ft, base, tmp_path / "out")
    # safe: the tokenizer emits those tokens, and the base's rows are what pre-training gave them (not the mean
    # HVA101's grow would write: its grow is settled on the base's rows too)
    assert sorted(set(fixed(report))) == [("HVA101", "safe"), ("HVA102", "safe"), ("HVA840", "safe")]
    out, theirs, ours = (load_file(str(f / "model.safetensors")) for f in (tmp_path / "out", base, ft))
    for name in MATRICES:
        assert torch.equal(out[name][:96], ours[name]) and torch.equal(out[name][96:], theirs[name][96:])
    model = AutoModelForCausalLM.from_pretrained(tmp_path / "out")
    prompt = torch.tensor([[1, 96, 97, 98, 99]])
    assert model.generate(prompt, max_new_tokens=3, do_sample=False).shape == (1, 8)
    assert pair_codes(tmp_path / "out", base) == set()


def test_token_rows_the_fine_tune_no_longer_has_a_token_for_need_unsafe_fixes(base, tmp_path, guard_input, run_cli):
    from transformers import AutoTokenizer

    ft = fine_tune(base, tmp_path / "ft", resize=96)
    make_tokenizer(ft, 96)  # its tokenizer cut too (ids 0..95): the same tokens, fewer
    assert len(AutoTokenizer.from_pretrained(ft)) == 96
    guard_input(ft)
    assert pair_codes(ft, base) == {"HVA840"}
    report = fix(run_cli, ft, base, tmp_path / "out")
    assert fixed(report) == []
    assert unfixed(report, "HVA840") == ["its fix changes the model's behaviour: rerun with --unsafe-fixes to apply it"] * 2
    report = fix(run_cli, ft, base, tmp_path / "out2", "--unsafe-fixes")
    assert fixed(report) == [("HVA840", "unsafe"), ("HVA840", "unsafe")]
    assert pair_codes(tmp_path / "out2", base) == set()


def test_what_cannot_be_regrown_says_why(base, tmp_path, guard_input, run_cli):
    from transformers import LlamaForCausalLM

    wide = tmp_path / "wide"  # another hidden size: the base's rows do not fit
    LlamaForCausalLM(_config(100, hidden=32)).save_pretrained(wide)
    make_tokenizer(wide, 96)
    guard_input(wide)
    report = fix(run_cli, wide, base, tmp_path / "out")
    advice = "no automatic fix: Resize only when the tokenizer is larger than the matrix, or with pad_to_multiple_of"
    assert unfixed(report, "HVA846") == [
        f"{advice} (--fix cannot give the rows back from the base: the hidden size differs "
        "(model.embed_tokens.weight 32, the base's model.embed_tokens.weight 16))",
        f"{advice} (--fix cannot give the rows back from the base: the hidden size differs "
        "(lm_head.weight 32, the base's lm_head.weight 16))"]
    foreign = fine_tune(base, tmp_path / "foreign", resize=100)
    make_tokenizer(foreign, 96, added_special=["<tool>"])  # id 96 is <tool> here, w92 in the base
    report = fix(run_cli, foreign, base, tmp_path / "out2")
    assert "HVA846" not in {f["code"] for f in report["fixes"]}
    assert all("is not the base's token at that id" in r for r in unfixed(report, "HVA846"))
    half = tmp_path / "half"  # the base's rows in another dtype: not copied (a cast would not be the base's bits)
    LlamaForCausalLM.from_pretrained(base, dtype=torch.bfloat16).save_pretrained(half)
    make_tokenizer(half, 100, chat_template=TEMPLATE)
    ft = fine_tune(base, tmp_path / "ft", resize=100)
    report = fix(run_cli, ft, half, tmp_path / "out4")
    assert all("the dtype differs (" in r and "F32" in r and "BF16" in r for r in unfixed(report, "HVA846"))
    assert len(unfixed(report, "HVA846")) == 2
    report = fix(run_cli, ft, base, tmp_path / "out5", "--pad-to-multiple-of", "96")
    assert unfixed(report, "HVA846") == ["--pad-to-multiple-of 96 would grow past the base's 128 rows"] * 2
    assert load_file(str(tmp_path / "out5" / "model.safetensors"))[MATRICES[0]].shape == (100, 16)  # nothing grew
    report = fix(run_cli, ft, base, tmp_path / "out3", "--method", "transformers")
    assert unfixed(report, "HVA846") == ["the transformers route does not copy rows from a base (the surgical route "
                                         "does)"] * 2


def test_nulled_special_ids_are_restored(base, tmp_path, guard_input, run_cli):
    from transformers import AutoModelForCausalLM

    ft = fine_tune(base, tmp_path / "ft")
    edit_json(ft / "generation_config.json", bos_token_id=None, eos_token_id=9)
    edit_json(ft / "config.json", pad_token_id=None)
    guard_input(ft)
    with pytest.raises(ValueError, match="bos_token_id"):
        AutoModelForCausalLM.from_pretrained(ft).generate(max_new_tokens=2, do_sample=False)
    report = fix(run_cli, ft, base, tmp_path / "out")
    assert fixed(report) == [("HVA841", "safe"), ("HVA841", "safe")]
    assert unfixed(report, "HVA841") == [
        "no automatic fix: the fine-tune declares another id, which may be meant (a new turn terminator): --fix "
        "does not choose; copy the base's id back by hand if it was not"]
    out = tmp_path / "out"
    assert json.loads((out / "generation_config.json").read_text())["bos_token_id"] == 1
    assert json.loads((out / "generation_config.json").read_text())["eos_token_id"] == 9  # left as it was
    assert json.loads((out / "config.json").read_text())["pad_token_id"] == 3
    model = AutoModelForCausalLM.from_pretrained(out)
    assert model.generate(max_new_tokens=2, do_sample=False)[0, 0] == 1  # a prompt-less generate starts at bos
    assert [f.message for f in audit(out, base=str(base)).findings if f.code == "HVA841"] == [
        "generation_config.json eos_token_id: the base has 2, the fine-tune 9"]


def test_an_id_the_fine_tunes_tokenizer_holds_another_token_at_is_not_restored(base, tmp_path, run_cli):
    ft = fine_tune(base, tmp_path / "ft")
    make_tokenizer(ft, 100, style="t5")  # id 1 is </s> here, <s> in the base
    edit_json(ft / "generation_config.json", bos_token_id=None)
    report = fix(run_cli, ft, base, tmp_path / "out")
    reasons = unfixed(report, "HVA841")
    assert any("the base's id 1 ('<s>') is not the same token in the fine-tune's tokenizer" in r for r in reasons)


@pytest.mark.parametrize("in_config", [False, True], ids=["chat_template.jinja", "tokenizer_config.json"])
def test_a_lost_chat_template_is_copied_from_the_base(base, tmp_path, guard_input, run_cli, in_config):
    from transformers import AutoTokenizer

    source = base
    if in_config:  # a base saved before chat_template.jinja: the template is a key of tokenizer_config.json
        source = fine_tune(base, tmp_path / "old-base")
        (source / "chat_template.jinja").unlink()
        edit_json(source / "tokenizer_config.json", chat_template=TEMPLATE)
        assert AutoTokenizer.from_pretrained(source).chat_template == TEMPLATE
    ft = fine_tune(base, tmp_path / "ft")
    (ft / "chat_template.jinja").unlink()
    edit_json(ft / "tokenizer_config.json", chat_template=None)
    guard_input(ft)
    assert AutoTokenizer.from_pretrained(ft).chat_template is None
    report = fix(run_cli, ft, source, tmp_path / "out")
    assert fixed(report) == [("HVA842", "safe")]
    out = tmp_path / "out"
    if in_config:
        assert json.loads((out / "tokenizer_config.json").read_text())["chat_template"] == TEMPLATE
        assert not (out / "chat_template.jinja").exists()
    else:
        assert (out / "chat_template.jinja").read_bytes() == (base / "chat_template.jinja").read_bytes()
    tok = AutoTokenizer.from_pretrained(out)
    assert tok.chat_template == TEMPLATE
    assert tok.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False) == "user: hi\n"
    assert pair_codes(out, source) == set()


def test_a_healthy_pair_gets_no_edit(base, tmp_path, guard_input, run_cli):
    from .fixkit import tree_hashes

    ft = guard_input(fine_tune(base, tmp_path / "ft"))
    report = fix(run_cli, ft, base, tmp_path / "out")
    assert report["fixes"] == [] and report["fix"]["method"] == "copy"
    assert tree_hashes(tmp_path / "out") == tree_hashes(ft)


def test_a_hub_base_is_not_read_for_rows(base, tmp_path):
    from hf_vocab_audit.core.fixes import CopyBaseRows
    from hf_vocab_audit.facts import gather
    from hf_vocab_audit.fix.paired_edits import BaseReader

    ft = fine_tune(base, tmp_path / "ft", resize=100)
    edit = CopyBaseRows("org/base-model", MATRICES[0], MATRICES[0], 128)
    assert BaseReader().rows(edit, facts=gather(ft)) == (
        "the base org/base-model is not a local folder: --fix reads the base's files from one")
    local = BaseReader().rows(CopyBaseRows(str(base), MATRICES[0], MATRICES[0], 128), facts=gather(ft))
    assert not isinstance(local, str) and local.path == base / "model.safetensors" and local.info.shape == (128, 16)


# ---- --target vllm: the chat a serving engine holds (HVA966, HVA967) ----

def _answers_im_end_forever(folder: Path) -> Path:
    """A ChatML model (eos </s> = 2, <|im_end|> = 105) whose every step emits <|im_end|>: the residual stream
    is its input embedding (attention and MLP write nothing), unit 0 of it positive, and only row 105 of
    lm_head reads unit 0."""
    from builders import CHATML, new_model

    model = new_model("llama", 106, tie_word_embeddings=False)
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        model.model.embed_tokens.weight[:, 0] = 10.0
        model.lm_head.weight.zero_()
        model.lm_head.weight[105, 0] = 100.0
    folder.mkdir(parents=True)
    model.save_pretrained(folder)
    make_tokenizer(folder, 104, added_special=["<|im_start|>", "<|im_end|>"], chat_template=CHATML)
    return folder


def _new_tokens(folder: Path) -> list[int]:
    from transformers import AutoModelForCausalLM

    out = AutoModelForCausalLM.from_pretrained(folder).generate(torch.tensor([[1, 5, 9]]), max_new_tokens=5,
                                                                 do_sample=False, pad_token_id=3)
    return out[0, 3:].tolist()


def test_the_token_closing_a_turn_becomes_a_stop_id(tmp_path, guard_input, run_cli):
    src = guard_input(_answers_im_end_forever(tmp_path / "m"))
    assert _new_tokens(src) == [105] * 5  # it closes its turn and runs on: eos 2 never comes
    code, stdout, err = run_cli("check", src, "--target", "vllm", "--fix", "--output", tmp_path / "out",
                                "--format", "json")
    report = json.loads(stdout)
    assert code == 0, err
    assert [(f["code"], f["action"], f["applicability"]) for f in report["fixes"]] == [
        ("HVA967", "add-stop-id", "safe")]
    assert json.loads((tmp_path / "out" / "generation_config.json").read_text())["eos_token_id"] == [2, 105]
    assert _new_tokens(tmp_path / "out") == [105]  # generate() stops at the ids vLLM stops at
    assert not {f["code"] for f in report["findings"]} & {"HVA966", "HVA967"}


def test_without_generation_config_one_is_made_from_config(tmp_path, guard_input, run_cli):
    from transformers import AutoModelForCausalLM

    src = _answers_im_end_forever(tmp_path / "m")
    (src / "generation_config.json").unlink()
    guard_input(src)
    code, _out, err = run_cli("check", src, "--target", "vllm", "--fix", "--output", tmp_path / "out")
    assert code == 0, err
    assert json.loads((tmp_path / "out" / "generation_config.json").read_text()) == {
        "eos_token_id": [2, 105], "bos_token_id": 1, "pad_token_id": 3}
    assert AutoModelForCausalLM.from_pretrained(tmp_path / "out").generate(max_new_tokens=1)[0, 0] == 1  # bos kept
    assert _new_tokens(tmp_path / "out") == [105]


def test_an_ordinary_token_closing_a_turn_is_not_made_a_stop_id(tmp_path, run_cli):
    from builders import checkpoint

    template = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }} w5 {% endfor %}"
    src = checkpoint(tmp_path / "m", "llama", 104, chat_template=template)
    code, stdout, _err = run_cli("check", src, "--target", "vllm", "--fix", "--output", tmp_path / "out",
                                 "--format", "json")
    report = json.loads(stdout)
    assert code == 1 and report["fixes"] == []
    assert unfixed(report, "HVA967") == [
        "no automatic fix: 'w5' is not a special token, so it also occurs inside answers: --fix adds only a special "
        "token as a stop id; end the template's turns with one, or add the id to generation_config.json "
        "eos_token_id by hand if answers never hold it"]
    assert (tmp_path / "out" / "generation_config.json").read_bytes() == (src / "generation_config.json").read_bytes()


def test_a_template_no_one_reads_is_moved_where_the_tokenizer_loads_it(tmp_path, guard_input, run_cli):
    from builders import CHATML
    from transformers import AutoTokenizer

    src = _answers_im_end_forever(tmp_path / "m")
    (src / "chat_template.jinja").unlink()
    (src / "chat_template.json").write_text(json.dumps({"chat_template": CHATML}))
    guard_input(src)
    assert AutoTokenizer.from_pretrained(src).chat_template is None  # what vLLM's tokenizer path gets
    code, stdout, err = run_cli("check", src, "--target", "vllm", "--fix", "--output", tmp_path / "out",
                                "--format", "json")
    report = json.loads(stdout)
    assert code == 0, err
    assert [(f["code"], f["action"]) for f in report["fixes"]] == [("HVA966", "write-chat-template+add-stop-id")]
    assert (tmp_path / "out" / "chat_template.jinja").read_text() == CHATML
    assert AutoTokenizer.from_pretrained(tmp_path / "out").chat_template == CHATML
    assert _new_tokens(tmp_path / "out") == [105]  # its turn end is a stop id too: HVA967 would fire otherwise
    assert not {f["code"] for f in report["findings"]} & {"HVA966", "HVA967"}


def test_a_template_that_fails_is_left_with_the_reason(tmp_path, run_cli):
    from builders import checkpoint

    src = checkpoint(tmp_path / "m", "llama", 104, chat_template="{{ raise_exception('roles must alternate') }}")
    code, stdout, _err = run_cli("check", src, "--target", "vllm", "--fix", "--output", tmp_path / "out",
                                 "--format", "json")
    report = json.loads(stdout)
    assert report["fixes"] == [] and [r.split(":")[0] for r in unfixed(report, "HVA966")] == ["no automatic fix"]
    assert "--fix does not rewrite a template" in unfixed(report, "HVA966")[0]


def test_sharded_fine_tune_and_base(tmp_path, guard_input, run_cli):
    """Both sides in shards: each shard holding a matrix is rewritten, the others copied, the index's
    total_size follows, and transformers loads the output."""
    from transformers import LlamaForCausalLM

    base = tmp_path / "base"
    make_tokenizer(base, 100, chat_template=TEMPLATE)
    torch.manual_seed(0)
    LlamaForCausalLM(_config()).save_pretrained(base, max_shard_size="10KB")
    ft = tmp_path / "ft"
    model = LlamaForCausalLM.from_pretrained(base)
    model.resize_token_embeddings(100, mean_resizing=False)
    model.save_pretrained(ft, max_shard_size="10KB")
    make_tokenizer(ft, 100, chat_template=TEMPLATE)
    index = json.loads((ft / "model.safetensors.index.json").read_text())["weight_map"]
    assert index[MATRICES[0]] != index[MATRICES[1]]  # the two matrices in two shards
    guard_input(ft)
    report = fix(run_cli, ft, base, tmp_path / "out")
    assert fixed(report) == [("HVA846", "safe"), ("HVA846", "safe")]
    out = LlamaForCausalLM.from_pretrained(tmp_path / "out")
    theirs = LlamaForCausalLM.from_pretrained(base)
    for mine, base_matrix in ((out.model.embed_tokens.weight, theirs.model.embed_tokens.weight),
                              (out.lm_head.weight, theirs.lm_head.weight)):
        assert torch.equal(mine[100:], base_matrix[100:])
    total = sum(t.numel() * t.element_size() for t in out.state_dict().values())
    meta = json.loads((tmp_path / "out" / "model.safetensors.index.json").read_text())["metadata"]
    assert meta["total_size"] == total
    assert pair_codes(tmp_path / "out", base) == set()


@pytest.mark.parametrize("fraction", [0.3, 0.9])
def test_a_full_disk_while_copying_the_bases_rows_leaves_nothing(base, tmp_path, fraction):
    """No file may grow past a fraction of the output's shard, which the rewrite that appends the base's rows
    writes (EFBIG, as on a full disk, for the kernel's copies as for Python's writes): one line, exit 2,
    neither input changed, no partial output."""
    import os
    import sys

    from fixsafety import no_partial_output, run_with_file_size_limit, tree_state

    ft = fine_tune(base, tmp_path / "ft", resize=100)
    before, base_before = tree_state(ft), tree_state(base)
    shard = 128 * 16 * 4 * 2  # the output's two matrices alone
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]), "HF_HUB_OFFLINE": "1"}
    target = tmp_path / "out"
    done = run_with_file_size_limit([sys.executable, "-m", "hf_vocab_audit", "check", str(ft), "--base", str(base),
                                     "--fix", "--output", str(target), "--verify-load", "never"],
                                    int(shard * fraction), env=env)
    assert done.returncode == 2, done.stderr[-2000:]
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr, done.stderr
    assert tree_state(ft) == before and tree_state(base) == base_before
    assert no_partial_output(target, {}, {p.name for p in tmp_path.iterdir()} - {"out"}) == []
    assert not target.exists()


def test_fix_checkpoint_takes_the_base_from_python(base, tmp_path, guard_input):
    from hf_vocab_audit.fix import fix_checkpoint

    ft = guard_input(fine_tune(base, tmp_path / "ft", resize=100))
    report = fix_checkpoint(ft, base=base, output=tmp_path / "out", verify_load="never")
    assert [(a.code, a.applicability.value) for a in report.fixes] == [("HVA846", "safe"), ("HVA846", "safe")]
    assert report.fix is not None and report.fix.rows_after == 128
    assert pair_codes(tmp_path / "out", base) == set()


@pytest.mark.parametrize("where", ["base", "around"])
def test_fix_checkpoint_never_writes_over_its_base(base, tmp_path, where):
    """From Python as from the CLI: an output that is the base (or holds it) is refused before anything is
    written, even with ``force`` (which would replace the folder the rows are copied from)."""
    import shutil

    from fixsafety import tree_state

    from hf_vocab_audit.errors import AuditError
    from hf_vocab_audit.fix import fix_checkpoint

    mine = tmp_path / "outer" / "base"
    shutil.copytree(base, mine)
    ft = fine_tune(mine, tmp_path / "ft", resize=100)
    before = tree_state(mine)
    output = mine if where == "base" else mine.parent
    with pytest.raises(AuditError, match="this run reads"):
        fix_checkpoint(ft, base=mine, output=output, force=True, verify_load="never")
    assert tree_state(mine) == before


# ---- --target tgi|sglang|mlx-lm: the same repairs, to where each engine reads (HVA980, HVA981) ----

def _tgi_reads(folder: Path) -> tuple[str | None, list[int]]:
    """What TGI 3.3.4's router takes (facts.served_template, its file rules) and the ids it stops at."""
    from hf_vocab_audit.facts import gather
    from hf_vocab_audit.facts.consumers import TGI, stop_ids
    from hf_vocab_audit.facts.served_template import served_template

    facts = gather(folder)
    return served_template(TGI, facts).template, sorted(stop_ids(TGI, facts))


def test_tgi_gets_the_template_transformers_saved_to_chat_template_jinja(tmp_path, guard_input, run_cli):
    """A transformers 5 save keeps the template only in chat_template.jinja, which TGI's router never reads:
    --fix puts it in tokenizer_config.json, and makes <|im_end|> a stop id TGI reads (a generation_config.json
    list, which replaces the tokenizer's eos in TGI: the eos goes in too)."""
    from builders import CHATML
    from transformers import AutoTokenizer

    src = guard_input(_answers_im_end_forever(tmp_path / "m"))
    assert "chat_template" not in json.loads((src / "tokenizer_config.json").read_text())
    assert _tgi_reads(src) == (None, [2])
    code, stdout, err = run_cli("check", src, "--target", "tgi", "--fix", "--output", tmp_path / "out",
                                "--format", "json")
    report = json.loads(stdout)
    assert code == 0, err
    assert [(f["code"], f["action"]) for f in report["fixes"]] == [("HVA980", "set-json-key+add-stop-id")]
    out = tmp_path / "out"
    assert json.loads((out / "tokenizer_config.json").read_text())["chat_template"] == CHATML
    assert json.loads((out / "generation_config.json").read_text())["eos_token_id"] == [2, 105]
    assert _tgi_reads(out) == (CHATML, [2, 105])
    assert AutoTokenizer.from_pretrained(out).chat_template == CHATML  # transformers reads the same template
    assert _new_tokens(out) == [105]
    assert not {f["code"] for f in report["findings"]} & {"HVA980", "HVA981"}


def test_tgi_stop_ids_keep_the_tokenizer_eos_the_list_replaces(tmp_path, guard_input, run_cli):
    """An integer eos in generation_config.json is ignored by TGI; the list --fix writes replaces the tokenizer's
    eos there, so the fix lists the closing token and the tokenizer's eos."""
    from builders import CHATML

    src = _answers_im_end_forever(tmp_path / "m")
    tok_config = json.loads((src / "tokenizer_config.json").read_text())
    (src / "tokenizer_config.json").write_text(json.dumps({**tok_config, "chat_template": CHATML}))
    generation = json.loads((src / "generation_config.json").read_text())
    (src / "generation_config.json").write_text(json.dumps({**generation, "eos_token_id": 3}))
    guard_input(src)
    assert _tgi_reads(src) == (CHATML, [2])
    code, stdout, err = run_cli("check", src, "--target", "tgi", "--fix", "--output", tmp_path / "out",
                                "--format", "json")
    report = json.loads(stdout)
    assert code == 0, err
    assert ("HVA981", "add-stop-id+add-stop-id") in [(f["code"], f["action"]) for f in report["fixes"]]
    assert json.loads((tmp_path / "out" / "generation_config.json").read_text())["eos_token_id"] == [3, 105, 2]
    assert "HVA981" not in {f["code"] for f in report["findings"]}
    assert _tgi_reads(tmp_path / "out") == (CHATML, [2, 3, 105])


def test_mlx_lm_stop_ids_are_left_with_the_reason(tmp_path, run_cli):
    """mlx-lm 0.26.3 never reads generation_config.json, where --fix adds stop ids: nothing written, reason said."""
    src = _answers_im_end_forever(tmp_path / "m")
    code, stdout, _err = run_cli("check", src, "--target", "mlx-lm", "--fix", "--output", tmp_path / "out",
                                 "--format", "json")
    report = json.loads(stdout)
    assert code == 1 and report["fixes"] == []
    assert unfixed(report, "HVA981") == [
        "no automatic fix: mlx-lm 0.26.3 never reads generation_config.json, where --fix adds stop ids: add the id "
        "to config.json's eos_token_id, or make it the tokenizer's eos_token"]


def test_sglang_gets_a_processor_template_moved_where_the_tokenizer_loads_it(tmp_path, guard_input, run_cli):
    from builders import CHATML
    from transformers import AutoTokenizer

    src = _answers_im_end_forever(tmp_path / "m")
    (src / "chat_template.jinja").unlink()
    (src / "chat_template.json").write_text(json.dumps({"chat_template": CHATML}))
    guard_input(src)
    code, stdout, err = run_cli("check", src, "--target", "sglang", "--fix", "--output", tmp_path / "out",
                                "--format", "json")
    report = json.loads(stdout)
    assert code == 0, err
    assert [(f["code"], f["action"]) for f in report["fixes"]] == [("HVA980", "write-chat-template+add-stop-id")]
    assert AutoTokenizer.from_pretrained(tmp_path / "out").chat_template == CHATML
    assert not {f["code"] for f in report["findings"]} & {"HVA980", "HVA981"}


def test_a_template_bomb_is_not_moved_for_tgi(tmp_path, run_cli):
    """The template --fix would move is rendered in the budgeted sandbox first: one that asks for a terabyte
    string fails there, and nothing is written (the reason is said)."""
    src = _answers_im_end_forever(tmp_path / "m")
    (src / "chat_template.jinja").write_text("{{ 'a' * 10**12 }}")
    code, stdout, _err = run_cli("check", src, "--target", "tgi", "--fix", "--output", tmp_path / "out",
                                 "--format", "json")
    report = json.loads(stdout)
    assert code in (0, 1) and report["fixes"] == []
    assert unfixed(report, "HVA980") == [
        "no automatic fix: Correct the template and save it where the engine reads it (it fails as it is: --fix does "
        "not rewrite a template)"]
