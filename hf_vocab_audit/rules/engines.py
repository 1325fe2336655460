"""HVA96x: what the consumers of a checkpoint (``facts.consumers``: transformers, vLLM, mlx-lm, ...) make of its
lm_head layout, where ``tie_word_embeddings`` and the tensors disagree.

These run without ``--target``: transformers itself goes wrong (it was run here, 5.24 on CPU), and the engines'
verdicts are quoted beside it from their source (the versions in ``facts.consumers``). HVA965 runs under
``--target vllm --tp N``: the splits vLLM refuses; HVA982 the same for ``--target sglang|tgi --tp N``, from each
engine's entry. HVA983 runs under any engine ``--target``: what THAT engine does with an lm_head layout it cannot
serve.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..core.findings import Location, Severity
from ..core.options import TargetKind
from ..facts.checkpoint import Facts
from ..facts.consumers import (
    ENGINE_TARGETS,
    VLLM,
    HeadUse,
    TensorParallel,
    head_layout,
    head_verdicts,
    initializer_range,
    tensor_parallel,
)
from ..facts.requirements import Requirement
from .registry import Hit, Scope, rule

if TYPE_CHECKING:
    from ..facts.targets import TargetFacts
    from ..io.rows import RowReader
    from ..weights.analysis import WeightFacts

# A freshly initialised lm_head: every row's std within this fraction of initializer_range, row means near 0.
FRESH_STD_TOLERANCE = 0.15
FRESH_MEAN_SIGMAS = 5.0  # |row mean| below this many standard errors of a mean of `width` normal draws
FRESH_CHUNK_ROWS = 4096
FRESH_OFF_ROWS = 0.02  # the fraction of rows that may look otherwise
FRESH_MIN_WIDTH = 64  # narrower rows vary too much to tell noise from a trained row


@rule("HVA960", "untied-lm-head-missing", Severity.ERROR, requires=(Requirement.TENSORS, Requirement.INPUT_EMBEDDING))
def untied_lm_head_missing(facts: Facts) -> Iterator[Hit]:
    """`config.json` says `tie_word_embeddings: false` but the weight files hold no `lm_head.weight`.

    Why:
    With untied embeddings the output projection is its own matrix; a checkpoint saved without it
    (a hand-edited flag, a conversion that dropped the tensor) loads in transformers with the head
    re-initialised at random: measured with transformers 5.24 on CPU, `from_pretrained` logs a LOAD
    REPORT "lm_head.weight | MISSING" ("newly initialized because missing from the checkpoint") and
    the head's rows have std `initializer_range`, unrelated to the embedding: the model emits noise
    and nothing fails. vLLM (0.10.2, `default_loader.py`) refuses it ("Following weights were not
    initialized from checkpoint: {'lm_head.weight'}"); mlx-lm (0.26.3) loads strictly and refuses it
    ("Missing parameters: lm_head.weight.").

    Fix:
    Set `tie_word_embeddings: true` if the model was trained tied, or save the checkpoint again from
    the trained model so that `lm_head.weight` is written.
    """
    layout = head_layout(facts)
    if not layout.untied_without_head:
        return
    emb = facts.embeddings
    name = emb.input.name if emb is not None and emb.input is not None else ""
    yield Hit(
        f"tie_word_embeddings is false but no lm_head.weight is saved (the input embedding is {name}): "
        f"transformers 5.24 re-initialises lm_head at random (LOAD REPORT: MISSING); {head_verdicts('untied_without_head')}",
        Location(file="config.json", key=facts.config.text_prefix + "tie_word_embeddings"),
        details={"tie_word_embeddings": False, "input": name},
    )


@rule("HVA961", "tied-lm-head-saved", Severity.INFO, requires=(Requirement.TENSORS, Requirement.INPUT_EMBEDDING))
def tied_lm_head_saved(facts: Facts) -> Iterator[Hit]:
    """`config.json` says `tie_word_embeddings: true` (or the architecture's default ties) but the weight files
    also hold an `lm_head.weight`: the consumers disagree on which matrix is the output projection.

    Why:
    transformers 5.24 (run here on CPU) ties the two when they are equal, but when the saved lm_head
    differs it does NOT tie: it logs "both are present in the checkpoints with different values, so we
    will NOT tie them" and serves the saved lm_head. vLLM (0.10.2, `models/llama.py` `load_weights`
    skips `lm_head.` when tied) and mlx-lm (0.26.3, `Model.sanitize` pops `lm_head.weight`) drop the
    saved head and use the embedding: the same checkpoint generates differently in training and in
    serving. `--weights` compares the two (HVA962, an error when they differ). A note, not a warning: a
    tied model saved with `torch.save` (`pytorch_model.bin`) holds both keys, equal, in many healthy
    checkpoints; only the comparison can tell a broken one.

    Fix:
    Decide which the model is: tied (delete `lm_head.weight` from the files) or untied (set
    `tie_word_embeddings: false`).
    """
    saved = head_layout(facts).tied_with_saved_head
    if saved is None:
        return
    yield Hit(
        f"tie_word_embeddings is true but {saved.name} is saved too: transformers 5.24 uses it when it differs from "
        f"the embedding; {head_verdicts('tied_with_saved_head')} (--weights compares them)",
        Location(file=saved.file, tensor=saved.name),
        details={"tensor": saved.name, "shape": list(saved.shape)},
    )


def _reader(w: WeightFacts, name: str) -> RowReader | None:
    from ..io.rows import RowReader, supported

    tensors = w.facts.tensors
    info = tensors.tensors.get(name) if tensors is not None else None
    if info is None or not info.file or supported(info) is not None:
        return None
    return RowReader(w.facts.model_dir, info)


@rule("HVA962", "tied-lm-head-differs", Severity.ERROR, scope=Scope.WEIGHTS)
def tied_lm_head_differs(w: WeightFacts) -> Iterator[Hit]:
    """The checkpoint says tied, saves an `lm_head.weight`, and that lm_head is not the embedding.

    Why:
    transformers 5.24 serves the saved lm_head (it refuses to tie different values, with a warning);
    vLLM 0.10.2 and mlx-lm 0.26.3 drop it and use the embedding. Two different models come out of one
    checkpoint, and which one runs depends on the consumer.

    Fix:
    If the saved lm_head is the trained one, set `tie_word_embeddings: false`; if the model is tied,
    delete `lm_head.weight` from the weight files.
    """
    import numpy as np

    facts = w.facts
    saved = head_layout(facts).tied_with_saved_head
    emb = facts.embeddings
    if saved is None or emb is None or emb.input is None or saved.shape != emb.input.shape:
        return
    head, inp = _reader(w, saved.name), _reader(w, emb.input.name)
    if head is None or inp is None:
        return
    rows = saved.shape[0]
    differ = 0
    first = -1
    for start in range(0, rows, FRESH_CHUNK_ROWS):
        a = head.to_float(np.asarray(head.raw[start:start + FRESH_CHUNK_ROWS]))
        b = inp.to_float(np.asarray(inp.raw[start:start + FRESH_CHUNK_ROWS]))
        bad = np.flatnonzero(np.any(a != b, axis=1))
        if bad.size and first < 0:
            first = start + int(bad[0])
        differ += int(bad.size)
    if not differ:
        return
    yield Hit(
        f"{saved.name} differs from {emb.input.name} in {differ} of {rows} rows (first: row {first}) although "
        f"tie_word_embeddings is true: transformers 5.24 serves the saved lm_head, {head_verdicts('tied_with_saved_head')}",
        Location(file=saved.file, tensor=saved.name, token_id=first),
        details={"rows_differing": differ, "rows": rows, "first": first},
    )


@rule("HVA963", "lm-head-freshly-initialised", Severity.ERROR, scope=Scope.WEIGHTS)
def lm_head_freshly_initialised(w: WeightFacts) -> Iterator[Hit]:
    """The untied lm_head looks freshly initialised (its rows normal with std `initializer_range`) while the
    input embedding does not: the checkpoint was saved from a model whose head was never loaded or trained.

    Why:
    transformers initialises a missing untied lm_head with `normal(0, initializer_range)` (measured:
    row std 0.0193 for 0.02) and a `save_pretrained` afterwards writes that noise as if it were trained
    (a checkpoint that once lost its head, HVA960). Every consumer then serves a model whose logits are
    random; nothing fails.

    Fix:
    Save the checkpoint again from the trained model, or tie the head (`tie_word_embeddings: true` and
    no `lm_head.weight`) if the model was trained tied.
    """
    import numpy as np

    facts = w.facts
    emb = facts.embeddings
    if emb is None or emb.tied or emb.output is None or emb.input is None:
        return
    head, inp = _reader(w, emb.output.name), _reader(w, emb.input.name)
    if head is None or inp is None or head.rows == 0 or head.cols < FRESH_MIN_WIDTH:
        return
    std = initializer_range(facts)
    if not _fresh(head, std, np) or _fresh(inp, std, np):
        return
    yield Hit(
        f"{emb.output.name} looks freshly initialised: its rows have mean ~0 and std within "
        f"{FRESH_STD_TOLERANCE:.0%} of initializer_range {std}, unlike {emb.input.name}",
        Location(file=emb.output.file, tensor=emb.output.name),
        details={"initializer_range": std, "rows": head.rows},
    )


def _fresh(reader: RowReader, std: float, np: Any) -> bool:
    """Whether the rows look like ``normal(0, std)`` draws: nearly every row's std near ``std`` and its mean near
    0 (a few rows may differ: transformers zeroes the pad row of a freshly built embedding)."""
    mean_bound = FRESH_MEAN_SIGMAS * std / float(np.sqrt(reader.cols))
    # a row's std of `cols` normal draws varies by about 1/sqrt(2 cols) of itself
    tolerance = max(FRESH_STD_TOLERANCE, FRESH_MEAN_SIGMAS / float(np.sqrt(2 * reader.cols))) * std
    off = 0
    for start in range(0, reader.rows, FRESH_CHUNK_ROWS):
        rows = reader.to_float(np.asarray(reader.raw[start:start + FRESH_CHUNK_ROWS]))
        s = rows.std(axis=1)
        off += int(np.count_nonzero((np.abs(s - std) > tolerance) | (np.abs(rows.mean(axis=1)) > mean_bound)))
    return off <= FRESH_OFF_ROWS * reader.rows


@rule("HVA965", "vllm-tensor-parallel-refused", Severity.ERROR, scope=Scope.TARGET)
def vllm_tensor_parallel_refused(t: TargetFacts) -> Iterator[Hit]:
    """vLLM will refuse to serve this checkpoint with `--tensor-parallel-size` = `--tp`: the attention heads, the
    KV heads or the padded vocabulary do not split that many ways.

    Why:
    Read in vLLM 0.10.2 (not run: vLLM does not run on the project's CPU machines).
    `ModelConfig.verify_with_parallel_config` (`vllm/config/__init__.py`) raises "Total number of
    attention heads (H) must be divisible by tensor parallel size (T)."; `LlamaAttention.__init__`
    (`vllm/model_executor/models/llama.py`) asserts `total_num_kv_heads % tp_size == 0` when there are
    at least `tp` KV heads and `tp_size % total_num_kv_heads == 0` otherwise (each rank holds a replica);
    `VocabParallelEmbedding` (`vllm/model_executor/layers/vocab_parallel_embedding.py`) pads
    `vocab_size` to a multiple of `DEFAULT_VOCAB_PADDING_SIZE` = 64 and splits the padded rows with
    `divide`, whose `ensure_divisibility` asserts "P is not divisible by T": any `tp` that does not
    divide 64 can fail there (3, 6, 12). The engine stops while loading, on every rank.

    Fix:
    Serve with a tensor-parallel size that divides the attention heads, is compatible with the KV heads
    (divides them, or is a multiple of them) and divides the padded vocabulary; a power of two up to the
    KV head count always does.
    """
    if t.target is not TargetKind.VLLM or t.tp is None:
        return
    split = tensor_parallel(VLLM, t.facts, t.tp)
    if split.refusals:
        yield _tp_refused(f"vLLM {VLLM.version}", "--tensor-parallel-size", split)


def _tp_refused(engine: str, flag: str, split: TensorParallel, first: dict[str, Any] | None = None,
                last: dict[str, Any] | None = None) -> Hit:
    """The engine stops at its first refusal: one finding, in the order it checks, the later refusals in its
    details (HVA965 for vLLM, HVA982 for the other engines). ``first`` / ``last``: more details around them."""
    (key, says), *later = split.refusals
    more = f" (then, with a size that passes this: {'; '.join(s for _k, s in later)})" if later else ""
    return Hit(
        f"{engine} with {flag} {split.tp} will stop while loading: {says}{more}",
        Location(file="config.json", key=key),
        details={**(first or {}), "tp": split.tp, "num_attention_heads": split.heads,
                 "num_key_value_heads": split.kv_heads, "vocab_size": split.vocab,
                 "padded_vocab_size": split.padded_vocab, "also": [{"key": k, "says": s} for k, s in later],
                 **(last or {})},
    )


@rule("HVA982", "serving-tensor-parallel-refused", Severity.ERROR, scope=Scope.TARGET)
def serving_tensor_parallel_refused(t: TargetFacts) -> Iterator[Hit]:
    """The engine `--target` names (sglang, tgi) will refuse to serve this checkpoint split `--tp` ways: the
    attention heads, the KV heads or the padded vocabulary do not split that many ways.

    Why:
    Read in each engine's source (not run; the versions and lines are in `facts.consumers`; `--target
    vllm` has the same check as HVA965). SGLang 0.4.10 (`--tp-size`): `LlamaAttention.__init__`
    (`models/llama.py:119-132`) asserts `total_num_heads % tp_size == 0`, and `total_num_kv_heads %
    tp_size == 0` or, with fewer KV heads than ranks, `tp_size % total_num_kv_heads == 0`; the vocabulary
    is padded to a multiple of 64 and split with `divide` ("P is not divisible by T",
    `layers/vocab_parallel_embedding.py:231-275`). TGI 3.3.4 (`--num-shard`): `FlashLlamaAttention`
    (`flash_llama_modeling.py:167-176`, the code of llama, phi3, granite, baichuan and phimoe) raises when
    `num_heads` or `num_key_value_heads` is not divisible by the shard count, with no replication of fewer KV
    heads; the other architectures' attention (`flash_qwen2_modeling.py`, `flash_mistral_modeling.py`,
    `flash_gemma2_modeling.py`, ...) checks only `num_heads` and divides the KV heads unchecked, so the
    server fails while starting on the q/k/v shapes instead; its vocabulary never refuses (the lm_head
    is loaded whole when it does not split, `layers/tensor_parallel.py:56-64`). The engine stops while
    loading, on every rank.

    Fix:
    Serve with a tensor-parallel size that divides the attention heads and the KV heads (SGLang also
    accepts a multiple of the KV heads) and divides the padded vocabulary; a power of two up to the KV
    head count always does.
    """
    consumer = ENGINE_TARGETS.get(t.target.value)
    if consumer is None or consumer is VLLM or consumer.heads is None or t.tp is None:
        return
    split = tensor_parallel(consumer, t.facts, t.tp)
    if split.refusals:
        yield _tp_refused(f"{consumer.name} {consumer.version}", consumer.heads.flag, split,
                          first={"engine": consumer.name}, last={"source": consumer.tp_source})


@rule("HVA983", "serving-lm-head-unusable", Severity.ERROR, scope=Scope.TARGET)
def serving_lm_head_unusable(t: TargetFacts) -> Iterator[Hit]:
    """The engine `--target` names cannot serve this checkpoint's lm_head layout: `tie_word_embeddings: false` and
    no `lm_head.weight` saved. What that engine does is said: it refuses to load, or it serves a head that was
    never trained.

    Why:
    HVA960 reports the layout for every consumer at once; under `--target` this says what the named engine
    does, read in its source (the versions and lines are in `facts.consumers`). vLLM 0.10.2 refuses
    ("Following weights were not initialized from checkpoint: {'lm_head.weight'}"); TGI 3.3.4 refuses
    ("RuntimeError: weight lm_head.weight does not exist", `utils/weights.py:192`); mlx-lm 0.26.3 refuses
    (strict `load_weights`: "Missing parameters: lm_head.weight."); SGLang 0.4.10 loads without a word and
    serves the head as allocated (`torch.empty`, `layers/quantization/unquant.py:47-62`; its `load_weights`
    never checks that every parameter was loaded): uninitialised memory as logits. The tied layout with a
    saved head anyway is HVA961/HVA962: every engine here drops the saved head and uses the embedding.

    Fix:
    Set `tie_word_embeddings: true` if the model was trained tied, or save the checkpoint again from the
    trained model so that `lm_head.weight` is written.
    """
    consumer = ENGINE_TARGETS.get(t.target.value)
    if consumer is None or not head_layout(t.facts).untied_without_head:
        return
    verdict: HeadUse = consumer.untied_without_head
    if not verdict.fails:
        return
    detail = f" ({consumer.untied_refusal})" if verdict is HeadUse.REFUSES and consumer.untied_refusal else ""
    yield Hit(
        f"tie_word_embeddings is false but no lm_head.weight is saved: {consumer.name} {consumer.version} "
        f"{verdict.value}{detail}",
        Location(file="config.json", key=t.facts.config.text_prefix + "tie_word_embeddings"),
        details={"engine": consumer.name, "version": consumer.version, "verdict": verdict.name.lower(),
                 "source": consumer.untied_source or consumer.source},
    )


__all__ = ["lm_head_freshly_initialised", "serving_lm_head_unusable", "serving_tensor_parallel_refused",
           "tied_lm_head_differs", "tied_lm_head_saved", "untied_lm_head_missing", "vllm_tensor_parallel_refused"]
