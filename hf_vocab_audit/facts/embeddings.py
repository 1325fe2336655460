"""Which tensors are the input embeddings, the output embeddings (lm_head), positions, token types
and classifier, from tensor names and shapes alone.

The vocabulary matrices are chosen as transformers loads them: by the parameter names the config's own classes
give them (``class_shapes.embedding_names``, derived from the classes on the meta device), so a decoy whose name
merely ends the same way (``a.embed_tokens.weight``, an unexpected key ``from_pretrained`` drops) is never the
matrix audited. An architecture not in that table falls back to the suffixes below, which mirror what
``get_input_embeddings()`` / ``get_output_embeddings()`` return in transformers
(``tests/facts/test_embeddings.py`` checks them against meta-device skeletons); where several tensors match
with different row counts, the one with the fewest rows is audited (the bound an id must fit), never the
first name in sort order.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..io.safetensors_header import TensorInfo
from .class_shapes import embedding_names, input_pieces
from .config import ConfigFacts
from .tensors import CheckpointTensors
from .transformers_tables import default_tie_word_embeddings

# Suffixes in priority order: encoder-decoder models share one matrix ("shared") between both sides.
INPUT_SUFFIXES = (
    "shared.weight",
    "embed_tokens.weight",
    "word_embeddings.weight",
    "wte.weight",
    "embed_in.weight",
    "tok_embeddings.weight",
)
OUTPUT_SUFFIXES = (
    "lm_head.weight",
    "lm_head.decoder.weight",
    "cls.predictions.decoder.weight",
    "embed_out.weight",
    "generator_lm_head.weight",
    "vocab_projector.weight",
    "lm_head.linear.weight",
)
# 1-D tensors of vocabulary size that must grow with the embeddings.
VOCAB_BIAS_SUFFIXES = ("final_logits_bias", "lm_head.bias", "cls.predictions.bias", "lm_head.decoder.bias",
                       "cls.predictions.decoder.bias", "generator_lm_head.bias", "vocab_projector.bias")
POSITION_SUFFIXES = ("position_embeddings.weight", "wpe.weight", "embed_positions.weight")
TOKEN_TYPE_SUFFIXES = ("token_type_embeddings.weight",)
CLASSIFIER_SUFFIXES = (
    "classifier.out_proj.weight",
    "classification_head.out_proj.weight",
    "classifier.weight",
    "score.weight",
)
# Architectures whose input embeddings carry rows beyond config.vocab_size by design (transformers builds
# MllamaTextModel.embed_tokens with vocab_size + 8 rows; its lm_head has vocab_size rows).
EXTRA_INPUT_ROWS = {"mllama": 8}
_SKIP_PARTS = ("vision", "visual", "audio", "image", "patch", "speech", "mm_projector")


def has_suffix(name: str, suffixes: tuple[str, ...]) -> bool:
    """Whether a tensor name is one of ``suffixes`` or ends with ``.<suffix>`` (whole path components)."""
    return any(name == s or name.endswith("." + s) for s in suffixes)


@dataclass(frozen=True)
class EmbeddingFacts:
    input: TensorInfo | None
    output: TensorInfo | None  # the lm_head tensor when untied and present
    tied: bool
    position: TensorInfo | None
    token_type: TensorInfo | None
    classifier: TensorInfo | None
    vocab_sized: tuple[TensorInfo, ...]  # every other tensor that grows with the vocabulary (biases <= rows)
    vocab_biases: tuple[TensorInfo, ...] = ()  # every vocabulary bias (final_logits_bias, MLM bias), any length
    # A CTC speech head (Wav2Vec2/HuBERT/WavLM ``ForCTC``): the model reads audio, not token ids, so there is
    # no input embedding by design; its vocabulary is ``output`` (lm_head rows = the CTC classes).
    ctc_head: bool = False

    @property
    def input_rows(self) -> int | None:
        return self.input.rows if self.input else None

    @property
    def output_rows(self) -> int | None:
        """Rows of the output projection as transformers builds it: the input matrix when tied."""
        if self.output is not None:
            return self.output.rows
        return self.input_rows if self.tied else None


def _find(tensors: dict[str, TensorInfo], suffixes: tuple[str, ...], ndim: int = 2, *,
          vocabulary: bool = False) -> TensorInfo | None:
    # One pass over the names with every suffix at once (str.endswith takes a tuple), then the priority
    # order among the few that match: a 405 B checkpoint has over a thousand tensors and five suffix lists.
    ends = tuple("." + s for s in suffixes)
    hits = [
        t
        for name, t in tensors.items()
        if (name.endswith(ends) or name in suffixes)
        and len(t.shape) == ndim
        and not any(part in name for part in _SKIP_PARTS)
    ]
    for suffix in suffixes:
        matches = [t for t in hits if has_suffix(t.name, (suffix,))]
        if matches:
            return _pick(matches, fewest=vocabulary)
    return None


def _pick(matches: list[TensorInfo], *, fewest: bool = True) -> TensorInfo:
    """One of several tensors that could be the matrix: the shortest path (decoder before encoder, then by name,
    for a stable answer); for a vocabulary matrix (``fewest``) whose candidates differ in rows, the one with the
    fewest, so an id past any candidate is found whichever one the model loads (a decoy with more rows never
    hides the real one)."""
    if fewest and len({t.shape[0] for t in matches}) > 1:
        return min(matches, key=lambda t: (t.shape[0], t.name.count("."), t.name))
    return min(matches, key=lambda t: (t.name.count("."), "encoder" in t.name, t.name))


def _named(tensors: dict[str, TensorInfo], names: tuple[str, ...] | list[str]) -> TensorInfo | None:
    """The 2-D tensor of one of the parameter names the architecture's classes use (several: as ``_pick``)."""
    found = [t for n in names if (t := tensors.get(n)) is not None and len(t.shape) == 2]
    return _pick(found) if found else None


def _fallback_input(tensors: dict[str, TensorInfo]) -> TensorInfo | None:
    """For unknown architectures: the largest 2-D tensor whose name says embedding."""
    candidates = [
        t
        for t in tensors.values()
        if len(t.shape) == 2
        and "embed" in t.name
        and "position" not in t.name
        and not any(part in t.name for part in _SKIP_PARTS)
    ]
    return max(candidates, key=lambda t: (t.shape[0], t.name)) if candidates else None


def _vocab_rows_input(tensors: dict[str, TensorInfo], config: ConfigFacts) -> TensorInfo | None:
    """For a vocabulary matrix of no known name (CTRL's ``transformer.w``): the 2-D tensor outside the layer
    stack with the config's ``vocab_size`` rows, as transformers sizes the input embedding. A checkpoint whose
    rows differ from vocab_size finds none here and fails closed (the vocabulary matrix is a gap)."""
    if not config.vocab_size:
        return None
    candidates = [
        t for t in tensors.values()
        if len(t.shape) == 2 and t.shape[0] == config.vocab_size and not has_suffix(t.name, OUTPUT_SUFFIXES)
        and not any(part.isdigit() for part in t.name.split(".")) and not any(p in t.name for p in _SKIP_PARTS)
    ]
    return min(candidates, key=lambda t: (t.name.count("."), t.name)) if candidates else None


def _fallback_position(tensors: dict[str, TensorInfo], config: ConfigFacts) -> TensorInfo | None:
    """A position table of a name the suffixes do not list (CLIP's ``position_embedding``), derived from what
    transformers sizes it by: a 2-D tensor whose module names positions (not relative ones) with the config's
    ``max_position_embeddings`` rows, or up to 2 more (tables with reserved rows)."""
    bound = config.max_position_embeddings
    if not bound:
        return None
    candidates = []
    for t in tensors.values():
        module = t.name.rsplit(".", 2)[-2] if t.name.count(".") else ""
        if (len(t.shape) == 2 and "position" in module and "rel" not in module and bound <= t.shape[0] <= bound + 2
                and not any(part in t.name for part in _SKIP_PARTS)):
            candidates.append(t)
    return min(candidates, key=lambda t: (t.name.count("."), t.name)) if candidates else None


def _pieced_input(tensors: dict[str, TensorInfo]) -> TensorInfo | None:
    """A vocabulary matrix stored in pieces that transformers' conversion mapping concatenates at load
    (Molmo2's ``wte.embedding`` + ``wte.new_embedding``): one matrix of their summed rows, named by its
    pieces. None unless every piece is there, 2-D, with the same width."""
    for sources, _target in input_pieces():
        for name in tensors:
            if not has_suffix(name, (sources[0],)):
                continue
            prefix = name[: len(name) - len(sources[0])]
            parts = [tensors.get(prefix + s) for s in sources]
            if all(p is not None and len(p.shape) == 2 for p in parts):
                found = [p for p in parts if p is not None]
                if len({p.shape[1] for p in found}) == 1:
                    return TensorInfo(" + ".join(p.name for p in found), found[0].dtype,
                                      (sum(p.shape[0] for p in found), found[0].shape[1]), found[0].file)
    return None


def find_embeddings(tensors: CheckpointTensors, config: ConfigFacts) -> EmbeddingFacts:
    table = tensors.tensors
    names = embedding_names(config.model_type)
    heads = [names.outputs[a] for a in config.architectures if a in names.outputs] if names else []
    inp = ((_named(table, names.inputs) if names else None) or _find(table, INPUT_SUFFIXES, vocabulary=True)
           or _pieced_input(table))
    out = _named(table, heads) or _find(table, OUTPUT_SUFFIXES, vocabulary=True)
    # A ForCTC class embeds audio frames, never token ids: no input matrix is expected and the CTC head is
    # the vocabulary (nothing to tie it to, whatever tie_word_embeddings says). Only a checkpoint with no
    # token embedding of a known name counts: the guesses below would take WavLM's relative-position
    # ``rel_attn_embed`` for one.
    ctc = inp is None and out is not None and any(a.endswith("ForCTC") for a in config.architectures)
    if inp is None and not ctc:
        inp = _fallback_input(table) or _vocab_rows_input(table, config)
    if out is not None and inp is not None and out.name == inp.name:
        out = None
    tie = config.tie_word_embeddings
    if tie is None:
        tie = default_tie_word_embeddings(config.model_type)
    if ctc:
        tie = False
    if tie:
        out = None  # transformers points the output projection at the input matrix
    return EmbeddingFacts(
        input=inp,
        output=out,
        tied=bool(tie),
        position=_find(table, POSITION_SUFFIXES) or _fallback_position(table, config),
        token_type=_find(table, TOKEN_TYPE_SUFFIXES),
        classifier=_find(table, CLASSIFIER_SUFFIXES),
        vocab_sized=vocab_biases(table, inp.rows if inp else None),
        vocab_biases=all_vocab_biases(table),
        ctc_head=ctc,
    )


def all_vocab_biases(table: dict[str, TensorInfo]) -> tuple[TensorInfo, ...]:
    """Every vocabulary bias (final_logits_bias (1, V), lm_head.bias, MLM prediction biases), at any length."""
    ends = tuple("." + s for s in VOCAB_BIAS_SUFFIXES)
    return tuple(
        sorted(
            (t for name, t in table.items()
             if (name.endswith(ends) or name in VOCAB_BIAS_SUFFIXES) and len(t.shape) in (1, 2)
             and t.shape[:-1] in ((), (1,))),
            key=lambda t: t.name,
        )
    )


def vocab_biases(table: dict[str, TensorInfo], vocab: int | None) -> tuple[TensorInfo, ...]:
    """The biases that grow with the embeddings (--fix): as long as the ``vocab`` rows or shorter. A longer
    one is reported (HVA106), never cut."""
    return tuple(t for t in all_vocab_biases(table) if vocab is not None and t.shape[-1] <= vocab)
