"""Sweep every text architecture and task head the installed transformers ships, with execution as the oracle.

For each model type in transformers' auto mappings (causal LM, seq2seq LM, masked LM, sequence and token
classification) the sweep builds a tiny configuration (2 layers, small hidden size, a small vocabulary),
instantiates it with transformers' own class on CPU, saves it with a word-level tokenizer built with the
``tokenizers`` library, and runs a few cases:

- ``healthy``: the tokenizer's ids fit the rows and its ``model_max_length`` fits the positions;
- ``added-no-resize``: tokens added to the tokenizer, the model not resized;
- ``padded``: more embedding rows than tokens (Qwen, T5 and Gemma ship that way: never a bug);
- ``special-past-rows``: a special token whose id is past the rows;
- ``max-length-past-positions``: ``model_max_length`` twice the positions the healthy pair runs.

The expected verdict of every case is decided by executing it: ``from_pretrained`` of the folder, a forward
over every id the tokenizer emits (its whole vocabulary, added and special tokens, the post-processor's bos/eos)
and over the longest sequence it allows. The tool's verdict is ``hf_vocab_audit.audit(folder)``: exit 0 clean,
1 a finding, 2 "cannot audit" (recorded with its reason, never counted as agreement). Text towers that pool at
the eos (CLIP's) are also run for the position ``pooler_output`` is taken at: another than the eos is "wrong",
a run that raises nothing and is still not clean.

    python scripts/family_sweep.py --limit 20          # print the table for the first 20 architectures
    python scripts/family_sweep.py --only llama,bert   # named model types only
    python scripts/family_sweep.py --write             # the whole sweep, into docs/families.md
    python scripts/family_sweep.py --families --write  # the families beyond one text config (tests/family_rows.py)

Nothing is downloaded and no remote code runs; every architecture gets ``--timeout`` seconds.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import math
import os
import re
import signal
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "families.md"
BEGIN, END = "<!-- family-sweep:begin -->", "<!-- family-sweep:end -->"

VOCAB = 64  # tokenizer and model rows of a healthy pair
POSITIONS = 64  # max_position_embeddings / n_positions where the config has one
ADDED = ["<new_a>", "<new_b>", "<new_c>"]
PAD_ROWS = 16  # extra rows of the padded case
SPECIALS = ["<unk>", "<s>", "</s>", "<pad>"]  # ids 0..3
IDS = {"bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 3, "decoder_start_token_id": 1, "sep_token_id": 2,
       "cls_token_id": 1, "unk_token_id": 0, "mask_token_id": 0}
CASES = ("healthy", "added-no-resize", "padded", "special-past-rows", "max-length-past-positions")

# head -> the auto mapping that names its class
HEADS = {
    "causal-lm": "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES",
    "seq2seq-lm": "MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES",
    "masked-lm": "MODEL_FOR_MASKED_LM_MAPPING_NAMES",
    "seq-cls": "MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES",
    "token-cls": "MODEL_FOR_TOKEN_CLASSIFICATION_MAPPING_NAMES",
    "text-encoder": "MODEL_FOR_TEXT_ENCODING_MAPPING_NAMES",  # CLIP's text tower, T5's encoder, BertModel
}

# Tiny sizes, applied to whichever of these keys a config has.
TINY: dict[str, Any] = {
    "hidden_size": 32, "d_model": 32, "n_embd": 32, "dim": 32, "embed_dim": 32, "model_dim": 32,
    "intermediate_size": 64, "d_ff": 64, "n_inner": 64, "hidden_dim": 64, "ffn_dim": 64, "encoder_ffn_dim": 64,
    "decoder_ffn_dim": 64, "moe_intermediate_size": 32, "shared_expert_intermediate_size": 32,
    "num_hidden_layers": 2, "n_layer": 2, "num_layers": 2, "n_layers": 2, "encoder_layers": 2, "decoder_layers": 2,
    "num_decoder_layers": 2,
    "num_attention_heads": 4, "n_head": 4, "num_heads": 4, "n_heads": 4, "encoder_attention_heads": 4,
    "decoder_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8, "d_kv": 8,
    "num_experts": 4, "num_local_experts": 4, "n_routed_experts": 4, "num_experts_per_tok": 2,
    "embedding_size": 32, "max_position_embeddings": POSITIONS, "n_positions": POSITIONS, "n_ctx": POSITIONS,
    # rotary and low-rank attention sizes that must fit the tiny heads (GPT-J, CodeGen, DeepSeek-V2/V3)
    "rotary_dim": 4, "qk_rope_head_dim": 4, "qk_nope_head_dim": 4, "v_head_dim": 8, "kv_lora_rank": 16,
    "q_lora_rank": 16,
    "attention_types": [[["global", "local"], 1]],  # GPT-Neo: one entry per layer of the 2
}  # fmt: skip
# Text towers that pool at the eos (transformers' CLIPTextTransformer and its copies): the run also checks that
# pooler_output is the hidden state of the eos ending the text, and the tokenizer puts its eos last, as CLIP's
# does (an eos of 2 selects transformers' legacy argmax pooling, which the sweep's ids 0..3 would defeat).
EOS_POOLED = {"clip_text_model", "groupvit_text_model", "xclip_text_model", "clipseg_text_model"}
VISION_KEYS = ("vision_config", "audio_config", "image_size", "num_mel_bins", "num_channels", "patch_size")


@dataclass
class Case:
    model_type: str
    head: str
    class_name: str
    case: str
    execution: str  # "clean" | "fails: <error>" | "wrong: <what>" (runs, silently wrong)
    tool: str  # "clean" | "finding: <codes>" | "cannot audit: <reason>"
    seconds: float  # the static check's wall time
    folder: str = ""  # where the pair was kept (--keep), for --rejudge

    @property
    def agree(self) -> bool:
        return self.execution.startswith("clean") == self.tool.startswith("clean") and not self.tool.startswith(
            "cannot")


@dataclass
class Sweep:
    cases: list[Case] = field(default_factory=list)
    excluded: dict[str, str] = field(default_factory=dict)  # "model_type head" -> why
    rerun: list[str] = field(default_factory=list)  # model types swept again into a table read back (--merge)


class Timeout(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    """Raise :class:`Timeout` after ``seconds`` (SIGALRM; the main thread of a POSIX process)."""
    if seconds <= 0 or not hasattr(signal, "SIGALRM"):
        yield
        return

    def fire(_signum: int, _frame: object) -> None:
        raise Timeout(f"over {seconds} s")

    old = signal.signal(signal.SIGALRM, fire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def targets(only: set[str] | None = None, heads: tuple[str, ...] = tuple(HEADS)) -> list[tuple[str, str, str]]:
    """(model_type, head, class name) for every head of every model type the auto mappings name."""
    from transformers.models.auto import modeling_auto

    out = []
    for head in heads:
        mapping = getattr(modeling_auto, HEADS[head])
        for model_type, class_name in sorted(mapping.items()):
            if only is None or model_type in only:
                out.append((model_type, head, class_name))
    return sorted(out)


def tiny_config(model_type: str, rows: int, **extra: Any) -> Any:
    """The config class's defaults, shrunk: every ``TINY`` key it has, ``rows`` vocabulary rows, ids 0..3.
    Raises ValueError (with the reason) for composite and non-text configs."""
    from transformers import CONFIG_MAPPING

    cls = CONFIG_MAPPING[model_type]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        default = cls()
    keys = default.to_dict()
    if getattr(cls, "sub_configs", None):
        raise ValueError(f"composite config ({', '.join(sorted(cls.sub_configs))})")
    if "vocab_size" not in keys:
        raise ValueError("no vocab_size (not a text model)")
    if any(k in keys for k in VISION_KEYS):
        raise ValueError("takes non-text inputs (" + next(k for k in VISION_KEYS if k in keys) + ")")
    params = {k: v for k, v in TINY.items() if k in keys}
    params.update({k: v for k, v in IDS.items() if k in keys or k in ("bos_token_id", "eos_token_id", "pad_token_id")})
    params["vocab_size"] = rows
    if model_type in EOS_POOLED:
        params["eos_token_id"] = VOCAB - 1  # the tokenizer's eos (build_tokenizer(eos_last=True))
    params.update(extra)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cls(**params)


def build_model(folder: Path, class_name: str, model_type: str, rows: int) -> None:
    import torch
    import transformers

    torch.manual_seed(0)
    cfg = tiny_config(model_type, rows)
    model = getattr(transformers, class_name)(cfg).eval()
    model.save_pretrained(folder)


def build_tokenizer(folder: Path, *, added: list[str] | None = None, special: list[str] | None = None,
                    model_max_length: int | None = None, eos_last: bool = False) -> None:
    """A word-level tokenizer of ``VOCAB`` ids (``SPECIALS`` first, then w0, w1, ...) wrapping text in
    <s> ... </s>, saved as transformers' PreTrainedTokenizerFast; ``eos_last`` swaps </s> with the last word
    (CLIP's layout: its eos is its largest id)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {t: i for i, t in enumerate(SPECIALS)}
    vocab.update({f"w{i}": len(SPECIALS) + i for i in range(VOCAB - len(SPECIALS))})
    if eos_last:
        last = f"w{VOCAB - len(SPECIALS) - 1}"
        vocab["</s>"], vocab[last] = vocab[last], vocab["</s>"]
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    tk.post_processor = processors.TemplateProcessing(single="<s> $A </s>", pair="<s> $A </s> $B </s>",
                                                      special_tokens=[("<s>", 1), ("</s>", vocab["</s>"])])
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="<unk>", bos_token="<s>", eos_token="</s>",
                                  pad_token="<pad>")
    if model_max_length is not None:
        tok.model_max_length = model_max_length
    if added:
        tok.add_tokens(added)
    if special:
        tok.add_special_tokens({"additional_special_tokens": special})
    tok.save_pretrained(folder)


def execute(folder: Path, class_name: str) -> str:
    """Load the pair as transformers does and run it: a forward over every id the tokenizer emits (its whole
    vocabulary with added and special tokens, and its own encoding with bos/eos) and over the longest sequence
    ``model_max_length`` allows. "clean", or "fails: <exception>"."""
    import torch
    import transformers

    try:
        model = getattr(transformers, class_name).from_pretrained(folder).eval()
        tok = transformers.AutoTokenizer.from_pretrained(folder)
        own = [tok("w1 w2 w3")["input_ids"]]  # the tokenizer's own encodings: bos ... eos
        every = list(range(len(tok))) + sorted(set(tok.all_special_ids))
        chunk = 16
        # each chunk ends in eos, as the tokenizer's own sequences do (T5's classifier pools at the eos)
        seqs = [every[i:i + chunk] + [tok.eos_token_id] for i in range(0, len(every), chunk)]
        limit = tok.model_max_length
        if limit is not None and limit < 100_000:
            own.append(tok(" ".join(["w5"] * (limit + 8)), truncation=True, max_length=limit)["input_ids"])
        encdec = bool(getattr(model.config, "is_encoder_decoder", False))
        with torch.no_grad():
            for ids in own + seqs:
                x = torch.tensor([ids])
                kwargs: dict[str, Any] = {"input_ids": x, "attention_mask": torch.ones_like(x)}
                if encdec:
                    kwargs["decoder_input_ids"] = x
                out = model(**kwargs)
                if ids in own and model.config.model_type in EOS_POOLED:
                    wrong = _pooled_elsewhere(out, ids, tok.eos_token_id)
                    if wrong:
                        return f"wrong: {wrong}"
    except Timeout:
        raise
    except Exception as exc:  # noqa: BLE001 - any failure of the run is the verdict
        first = (str(exc).strip().splitlines() or [""])[0][:90]
        return f"fails: {type(exc).__name__}: {first}"
    return "clean"


def _pooled_elsewhere(out: Any, ids: list[int], eos: int) -> str | None:
    """Where an eos-pooling text tower took ``pooler_output``, when it is not the eos ending ``ids``."""
    import torch

    hidden, pooled = out.last_hidden_state[0], out.pooler_output[0]
    at = [i for i in range(hidden.shape[0]) if torch.equal(hidden[i], pooled)]
    end = len(ids) - 1 - ids[::-1].index(eos) if eos in ids else None
    if end is not None and at and at[0] == end:
        return None
    return f"pooled at position {at[0] if at else '?'}, the eos is at {end} (no error)"


def tool_verdict(folder: Path) -> tuple[str, float]:
    """hf_vocab_audit.audit(folder) as a gate reads it, and the static check's wall time."""
    from hf_vocab_audit import AuditError, audit

    start = time.perf_counter()
    try:
        report = audit(folder)
    except AuditError as exc:
        return f"cannot audit: {str(exc).splitlines()[0][:120]}", time.perf_counter() - start
    seconds = time.perf_counter() - start
    code = report.exit_code()
    if code == 0:
        return "clean", seconds
    if code == 1:
        codes = sorted({f.code for f in report.failing()})
        return "finding: " + ", ".join(codes), seconds
    gaps = "; ".join(f"{g.what}: {g.reason}" for g in report.coverage.not_examined) or "; ".join(
        str(e) for e in report.errors)
    return f"cannot audit: {gaps[:120]}", seconds


def healthy_length(folder: Path, class_name: str) -> int | None:
    """The longest ``model_max_length`` the healthy model runs, by execution: the config's positions, less
    up to 4 reserved rows (RoBERTa and BART-style tables start past row 0); None without a position bound."""
    import torch
    import transformers

    model = getattr(transformers, class_name).from_pretrained(folder).eval()
    encdec = bool(getattr(model.config, "is_encoder_decoder", False))
    for length in range(POSITIONS, POSITIONS - 5, -1):
        x = torch.full((1, length), 5)
        kwargs: dict[str, Any] = {"input_ids": x}
        if encdec:
            kwargs["decoder_input_ids"] = x
        try:
            with torch.no_grad():
                model(**kwargs)
            return length
        except Exception:  # noqa: BLE001,S112 - too long for the table: try one shorter
            continue
    return None


def run_case(work: Path, model_type: str, head: str, class_name: str, case: str, max_len: int) -> Case:
    folder = work / f"{model_type}-{head}-{case}"
    rows = VOCAB + PAD_ROWS if case == "padded" else VOCAB
    build_model(folder, class_name, model_type, rows)
    eos_last = model_type in EOS_POOLED
    if case == "added-no-resize":
        build_tokenizer(folder, added=ADDED, model_max_length=max_len, eos_last=eos_last)
    elif case == "special-past-rows":
        build_tokenizer(folder, special=["<|extra|>"], model_max_length=max_len, eos_last=eos_last)
    elif case == "max-length-past-positions":
        build_tokenizer(folder, model_max_length=2 * POSITIONS, eos_last=eos_last)
    else:
        build_tokenizer(folder, model_max_length=max_len, eos_last=eos_last)
    expected = execute(folder, class_name)
    tool, seconds = tool_verdict(folder)
    return Case(model_type, head, class_name, case, expected, tool, seconds, str(folder))


def sweep_one(work: Path, model_type: str, head: str, class_name: str, sweep: Sweep,
              cases: tuple[str, ...] = CASES) -> None:
    """Every case of one (architecture, head); an architecture that cannot be built or whose healthy pair does
    not run on CPU is excluded with the reason."""
    key = f"{model_type} {head}"
    probe = work / f"{model_type}-{head}-probe"
    try:
        build_model(probe, class_name, model_type, VOCAB)
        max_len = healthy_length(probe, class_name) or POSITIONS
    except Timeout:
        raise
    except Exception as exc:  # noqa: BLE001 - recorded as the reason it is excluded
        first = (str(exc).strip().splitlines() or [""])[0][:100]
        sweep.excluded[key] = f"cannot build on CPU: {type(exc).__name__}: {first}"
        return
    done = []
    for case in cases:
        result = run_case(work, model_type, head, class_name, case, max_len)
        if case == "healthy" and not result.execution.startswith("clean"):
            sweep.excluded[key] = f"healthy pair does not run: {result.execution.removeprefix('fails: ')}"
            return
        done.append(result)
    sweep.cases.extend(done)


def run_sweep(only: set[str] | None = None, limit: int | None = None, timeout: int = 60,
              heads: tuple[str, ...] = tuple(HEADS), cases: tuple[str, ...] = CASES, quiet: bool = True,
              keep: Path | None = None) -> Sweep:
    """The sweep over the auto mappings' (architecture, head) pairs (the first ``limit`` architectures);
    ``keep`` keeps the built pairs there (else they live in a temporary folder per pair)."""
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    sweep = Sweep()
    todo = targets(only, heads)
    if limit is not None:
        first = sorted({t[0] for t in todo})[:limit]
        todo = [t for t in todo if t[0] in first]
    for model_type, head, class_name in todo:
        with tempfile.TemporaryDirectory(prefix="sweep-") as tmp:
            try:
                with time_limit(timeout), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    sweep_one(keep or Path(tmp), model_type, head, class_name, sweep, cases)
            except Timeout as exc:
                sweep.excluded[f"{model_type} {head}"] = f"timed out ({exc})"
                sweep.cases = [c for c in sweep.cases if (c.model_type, c.head) != (model_type, head)]
        if keep is not None:
            save(sweep, keep / "sweep.partial.json")  # after every pair: a sweep cut short keeps what it did
        if not quiet:
            print(f"{model_type:28} {head:10} {sweep.excluded.get(f'{model_type} {head}', 'swept')}",
                  file=sys.stderr, flush=True)
    return sweep


def save(sweep: Sweep, path: Path) -> None:
    path.write_text(json.dumps({"cases": [vars(c) for c in sweep.cases], "excluded": sweep.excluded}, indent=1))


def merge(before: dict[str, Any], now: Sweep) -> Sweep:
    """A kept sweep with the (architecture, head) pairs swept ``now`` replaced by their new results."""
    redone = {(c.model_type, c.head) for c in now.cases} | {tuple(k.split(" ", 1)) for k in now.excluded}
    out = Sweep(excluded={k: v for k, v in before["excluded"].items() if tuple(k.split(" ", 1)) not in redone})
    out.cases = [Case(**c) for c in before["cases"] if (c["model_type"], c["head"]) not in redone]
    out.cases += now.cases
    out.excluded.update(now.excluded)
    return out


def from_doc(doc: Path = DOC) -> dict[str, Any]:
    """The table already in ``doc`` read back as a kept sweep (``sweep.json``'s shape), for ``--merge``: its
    rows carry no class name, folder or timing (NaN seconds, left out of the median)."""
    text = doc.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{doc}: no generated sweep table to merge into")
    section = text.split(BEGIN, 1)[1].split(END, 1)[0]
    cases: list[dict[str, Any]] = []
    excluded: dict[str, str] = {}
    in_excluded = False
    for line in section.splitlines():
        if line.startswith("### Excluded"):
            in_excluded = True
        if not line.startswith("| ") or line.startswith(("| architecture", "| ---")):
            continue
        # each cell is rendered " text " (the text itself may end in a space: the run's first line, cut)
        cells = [c[1:-1].replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.rstrip("\n"))[1:-1]]
        if in_excluded and len(cells) == 3:
            excluded[f"{cells[0]} {cells[1]}"] = cells[2]
        elif not in_excluded and len(cells) == 6:
            cases.append({"model_type": cells[0], "head": cells[1], "class_name": "", "case": cells[2],
                          "execution": cells[3], "tool": cells[4], "seconds": float("nan"), "folder": ""})
    return {"cases": cases, "excluded": excluded}


def rejudge(path: Path) -> Sweep:
    """A kept sweep (``--keep DIR``) judged again by this version of the tool: the executions are not rerun
    (they do not depend on the tool), only ``audit(folder)``."""
    data = json.loads(path.read_text())
    sweep = Sweep(excluded=data["excluded"])
    for c in data["cases"]:
        case = Case(**c)
        case.tool, case.seconds = tool_verdict(Path(case.folder))
        sweep.cases.append(case)
    return sweep


def render(sweep: Sweep) -> str:
    import transformers

    cases = sweep.cases
    agree = sum(c.agree for c in cases)
    cannot = sum(c.tool.startswith("cannot") for c in cases)
    healthy_alarms = [c for c in cases if c.execution == "clean" and c.tool.startswith("finding")]
    archs = sorted({c.model_type for c in cases})
    times = [c.seconds for c in cases if not math.isnan(c.seconds)]
    lines = [
        BEGIN,
        "## The sweep: every text architecture and head, verdicts by execution",
        "",
        f"Generated by `python scripts/family_sweep.py --write` with transformers {transformers.__version__}: "
        "tiny configurations of every model type in the auto mappings (causal LM, seq2seq LM, masked LM, "
        "sequence and token classification, text encoders), each saved with a word-level tokenizer; the expected verdict of "
        "every case is the run (`from_pretrained`, a forward over every id the tokenizer emits and the longest "
        "sequence it allows; for text towers that pool at the eos, the pooled position too), the tool's is "
        "`audit(folder)` (exit 0 clean, 1 finding, 2 cannot audit: never "
        "counted as agreement).",
        "",
        f"**{agree} of {len(cases)} cases agree ({100 * agree / max(len(cases), 1):.1f}%)** over "
        f"{len(archs)} architectures ({len({(c.model_type, c.head) for c in cases})} architecture x head pairs); "
        f"{cannot} cases the tool cannot audit (exit 2, reason stated); {len(healthy_alarms)} false alarms on a "
        f"case that runs; {len(sweep.excluded)} architecture x head pairs excluded (below). Median static check: "
        f"{1000 * statistics.median(times) if times else 0:.0f} ms"
        + (f" (over the {len(times)} cases timed in the rerun)." if sweep.rerun else "."),
        "",
    ]
    if sweep.rerun:
        lines += [
            f"Rows of {', '.join(sorted(sweep.rerun))} swept again on {datetime.date.today().isoformat()} "
            "(`python scripts/family_sweep.py --only ... --merge --write`); the other rows are the last whole "
            "sweep's.",
            "",
        ]
    lines += [
        "| architecture | head | case | execution | tool | agree |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for c in sorted(cases, key=lambda c: (c.model_type, c.head, CASES.index(c.case))):
        ex = c.execution.replace("|", "\\|")
        tool = c.tool.replace("|", "\\|")
        lines.append(f"| {c.model_type} | {c.head} | {c.case} | {ex} | {tool} | {'yes' if c.agree else '**no**'} |")
    lines += ["", "### Excluded", "", "| architecture | head | why |", "| --- | --- | --- |"]
    for key, why in sorted(sweep.excluded.items()):
        mt, head = key.split(" ", 1)
        lines.append(f"| {mt} | {head} | {why.replace('|', '/')} |")
    lines.append(END)
    return "\n".join(lines) + "\n"


def write(text: str, doc: Path = DOC, begin: str = BEGIN, end: str = END) -> None:
    """Replace the generated section of ``doc`` (between the markers), or append it."""
    old = doc.read_text(encoding="utf-8")
    if begin in old and end in old:
        head, rest = old.split(begin, 1)
        tail = rest.split(end, 1)[1]
        new = head + text.rstrip("\n") + tail
    else:
        new = old.rstrip("\n") + "\n\n" + text
    doc.write_text(new, encoding="utf-8")


# --- Families beyond one text config (tests/family_rows.py) ----------------------------------------------------

FAMILY_BEGIN, FAMILY_END = "<!-- family-rows:begin -->", "<!-- family-rows:end -->"


@dataclass
class FamilyRow:
    family: str
    case: str
    execution: str  # "clean" | "fails: ..." | "wrong: ..." (runs, silently wrong)
    tool: str  # "clean" | "finding: <codes>" | "warning: <codes>" | "cannot audit: <reason>"

    @property
    def agree(self) -> bool:
        return self.execution.startswith("clean") == self.tool.startswith("clean") and not self.tool.startswith(
            "cannot")


def family_tool_verdict(target: Path, datasets: tuple[str, ...], codes: tuple[str, ...]) -> str:
    """``audit(target)`` as the gate reads it; a finding of the family's own codes that is only a warning (a
    value silently wrong: the run does not raise) is named too, since the gate passes it."""
    from hf_vocab_audit import AuditError, audit

    try:
        report = audit(target, datasets=list(datasets) or None)
    except AuditError as exc:
        return f"cannot audit: {str(exc).splitlines()[0][:120]}"
    code = report.exit_code()
    if code == 1:
        return "finding: " + ", ".join(sorted({f.code for f in report.failing()}))
    if code != 0:
        return "cannot audit: " + "; ".join(f"{g.what}: {g.reason}" for g in report.coverage.not_examined)[:120]
    warned = sorted({f.code for f in report.findings if f.code in codes})
    return "warning: " + ", ".join(warned) if warned else "clean"


def run_families(only: set[str] | None = None) -> list[FamilyRow]:
    """Every case of ``tests/family_rows.py`` (families named in ``only``, by their first word, when given):
    built, run, and audited, each in a temporary folder."""
    import transformers

    sys.path.insert(0, str(ROOT / "tests"))
    import family_rows

    transformers.logging.set_verbosity_error()
    rows = []
    for case in family_rows.CASES:
        if only is not None and case.family.split()[0].lower().rstrip(",") not in only:
            continue
        with tempfile.TemporaryDirectory(prefix="family-") as tmp, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                ran = case.build_and_run(Path(tmp))
            except Exception as exc:  # noqa: BLE001 - a case that cannot be built is shown, never dropped
                rows.append(FamilyRow(case.family, case.case, f"not built: {type(exc).__name__}: {exc}"[:120],
                                      "cannot audit: not built"))
                continue
            rows.append(FamilyRow(case.family, case.case, ran.execution,
                                  family_tool_verdict(ran.target, ran.datasets, case.codes)))
    return rows


def render_families(rows: list[FamilyRow]) -> str:
    import transformers

    agree = sum(r.agree for r in rows)
    lines = [
        FAMILY_BEGIN,
        "## Families beyond one text config: verdicts by execution",
        "",
        f"Generated by `python scripts/family_sweep.py --families --write` with transformers "
        f"{transformers.__version__}: each case of `tests/family_rows.py` is built with transformers' (or peft's) "
        "own classes and run on CPU as its test runs it (a forward, a training step, `encode()`, the loss of a "
        "collated batch, the pooled position, two adapter loads); \"wrong\" is a run that raises nothing but "
        "computes the wrong thing. The GGUF rows are llama.cpp's code read, not run (it is not installed here). "
        "The tool's verdict is `audit()` (a warning of the family's own codes is named: the gate passes it).",
        "",
        f"**{agree} of {len(rows)} cases agree ({100 * agree / max(len(rows), 1):.1f}%).**",
        "",
        "| family | case | execution | tool | agree |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        cells = [c.replace("|", "\\|") for c in (r.family, r.case, r.execution, r.tool)]
        lines.append("| " + " | ".join(cells) + f" | {'yes' if r.agree else '**no**'} |")
    lines.append(FAMILY_END)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="comma-separated model types")
    ap.add_argument("--limit", type=int, help="the first N model types only")
    ap.add_argument("--heads", default=",".join(HEADS), help="comma-separated heads (default: all)")
    ap.add_argument("--timeout", type=int, default=60, help="seconds per architecture and head")
    ap.add_argument("--write", action="store_true", help="write the table into docs/families.md")
    ap.add_argument("--keep", type=Path,
                    help="keep the built pairs and the results (sweep.json) in this folder (whole sweep: about 40 GB)")
    ap.add_argument("--rejudge", type=Path, help="judge a kept sweep's pairs again (no rebuild, no execution)")
    ap.add_argument("--families", action="store_true",
                    help="the families beyond one text config (tests/family_rows.py) instead of the sweep")
    ap.add_argument("--merge", action="store_true",
                    help="merge this run into the table already in docs/families.md (its pairs replace theirs)")
    args = ap.parse_args(argv)
    only = set(args.only.split(",")) if args.only else None
    if args.families:
        text = render_families(run_families(only))
        if args.write:
            write(text, DOC, FAMILY_BEGIN, FAMILY_END)
        else:
            print(text)
        return 0
    if args.rejudge:
        sweep = rejudge(args.rejudge / "sweep.json")
    else:
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
        kept = args.keep / "sweep.json" if args.keep else None
        before = json.loads(kept.read_text()) if kept is not None and kept.is_file() else None
        sweep = run_sweep(only, args.limit, args.timeout, tuple(args.heads.split(",")), quiet=False, keep=args.keep)
        if args.merge and before is None:
            before = from_doc()
        if before is not None:  # a partial rerun: its pairs replace the kept (or --merge: the doc's) ones
            sweep = merge(before, sweep)
        if kept is not None:
            save(sweep, kept)
        if args.merge:  # rows read back from the doc carry no timing: the rest were swept again here
            sweep.rerun = sorted({c.model_type for c in sweep.cases if not math.isnan(c.seconds)})
    text = render(sweep)
    if args.write:
        write(text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
