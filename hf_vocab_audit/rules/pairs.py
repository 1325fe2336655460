"""HVA84x: a full fine-tuned checkpoint against its base (``check FT --base BASE``; the rows with ``--weights``).

Findings are placed in the fine-tune's files (the report's target); their details name the base's file.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..core.findings import Location, Severity
from ..core.fixes import Applicability, CopyBaseChatTemplate, CopyBaseRows, Fix, FixAvailability, SetJsonKey
from .registry import Hit, Scope, rule

if TYPE_CHECKING:  # numpy is imported only when a --weights rule runs; the pair only with --base
    from ..facts.pairs import BaseFacts, Shrunk, SpecialChange
    from ..io.safetensors_header import TensorInfo
    from ..weights.base_rows import BaseRows

SHOW = 10
TEMPLATE_FILES = ("chat_template.jinja", "tokenizer_config.json")  # where --fix copies a base's template from


def _ids(ids: tuple[int, ...]) -> str:
    return ", ".join(map(str, ids[:SHOW])) + (f" and {len(ids) - SHOW} more" if len(ids) > SHOW else "")


@rule("HVA840", "base-rows-shrunk", Severity.ERROR, scope=Scope.BASE, fix=FixAvailability.SOMETIMES)
def base_rows_shrunk(pair: BaseFacts) -> Iterator[Hit]:
    """A vocabulary matrix of the fine-tune has fewer rows than the base's tokens: rows of tokens were cut.

    Why:
    `resize_token_embeddings(len(tokenizer))` shrinks without complaint when the tokenizer is shorter than the
    matrix, as it is on every padded model (Gemma-3 262208 rows for 262145 tokens, OLMo-2, Qwen). The cut rows
    are gone from the fine-tune: padding rows the base kept for alignment, and any trained row past
    `len(tokenizer)` (unsloth-zoo#121); a tokenizer that later grows back into them gets fresh, untrained rows,
    and the fine-tune no longer loads with the base's config (`size mismatch`).

    Fix:
    Resize only when the tokenizer is larger than the matrix (`len(tokenizer) > embeddings.num_embeddings`, as
    transformers' examples do since PR #20043) and fine-tune again from the base. `--fix` (with `--base`) gives
    the cut rows back from the base, bit for bit, the fine-tune's own rows kept. It is safe when the fine-tune's
    tokenizer still emits every cut token (the model fails on them, and the base's row is what pre-training
    taught them); unsafe (`--unsafe-fixes`) when its tokenizer lost them too, since the model can then sample
    ids its tokenizer cannot decode.
    """
    foreign = _ForeignOnce(pair)
    for s in pair.shrunk:
        if not s.tokens_cut:
            continue  # padding only: HVA846
        ours = pair.target.tokenizer
        emitted = ours is not None and s.base_tokens is not None and ours.max_id + 1 >= s.base_tokens
        fix, why = _regrow_fix(pair, s, Applicability.SAFE if emitted else Applicability.UNSAFE, foreign,
                               "Resize only when the tokenizer is larger than the matrix, and fine-tune again from "
                               "the base")
        yield Hit(f"{s.tensor} has {s.rows} rows; the base's {s.base_tensor} has {s.base_rows}: "
                  f"{s.base_rows - s.rows} row(s) of the base were cut",
                  Location(file=_file_of(pair, s.role), tensor=s.tensor), hint=why, fix=fix,
                  details={"matrix": s.role, "rows": s.rows, "base_rows": s.base_rows, "base": pair.base_ref,
                           "base_tensor": s.base_tensor, "base_file": _file_of(pair, s.role, base=True)})


@rule("HVA846", "base-padding-rows-cut", Severity.WARNING, scope=Scope.BASE, fix=FixAvailability.SOMETIMES)
def base_padding_rows_cut(pair: BaseFacts) -> Iterator[Hit]:
    """A vocabulary matrix of the fine-tune lost padding rows of the base (rows past its tokens), none of a token.

    Why:
    The fine-tune itself runs (every id its tokenizer emits has a row: measured with transformers 5 on CPU), but
    it no longer has its base's shape: an adapter trained on the base, a merge back into it, or an engine
    config written for the base's `vocab_size` hit `size mismatch`, and a tokenizer that later grows into the
    cut rows gets fresh, untrained ones. Gemma-3 (262208 rows for 262145 tokens), OLMo-2 and Qwen pad on purpose.

    Fix:
    Resize only when the tokenizer is larger than the matrix (`len(tokenizer) > embeddings.num_embeddings`), or
    with `pad_to_multiple_of` so the rows stay at least the base's. `--fix` (with `--base`) copies the cut
    padding rows back from the base, bit for bit, the fine-tune's own rows kept: safe, since no token maps to
    them and the base's own padding rows are what they were.
    """
    foreign = _ForeignOnce(pair)
    for s in pair.shrunk:
        if s.tokens_cut:
            continue  # HVA840
        fix, why = _regrow_fix(pair, s, Applicability.SAFE, foreign,
                               "Resize only when the tokenizer is larger than the matrix, or with pad_to_multiple_of")
        yield Hit(f"{s.tensor} has {s.rows} rows; the base's {s.base_tensor} has {s.base_rows} for its "
                  f"{s.base_tokens} tokens: {s.base_rows - s.rows} padding row(s) were cut (no token lost its row)",
                  Location(file=_file_of(pair, s.role), tensor=s.tensor), hint=why, fix=fix,
                  details={"matrix": s.role, "rows": s.rows, "base_rows": s.base_rows, "base_tokens": s.base_tokens,
                           "base": pair.base_ref, "base_tensor": s.base_tensor,
                           "base_file": _file_of(pair, s.role, base=True)})


def _regrow_fix(pair: BaseFacts, s: Shrunk, how: Applicability, foreign: _ForeignOnce,
                advice: str) -> tuple[Fix | None, str | None]:
    """The fix that gives a shrunk matrix its base's rows back, or why there is none: the finding's hint
    (``advice``, then why), which ``--fix`` reports as the reason it left the finding alone."""
    why = _regrow_refusal(pair, s) or foreign.why(s.base_rows)
    if why is not None:
        return None, f"{advice} (--fix cannot give the rows back from the base: {why})"
    return Fix(f"grow {s.tensor} back to the base's {s.base_rows} rows: its {s.rows} rows kept, rows {s.rows}.."
               f"{s.base_rows - 1} copied from the base's {s.base_tensor}", how,
               (CopyBaseRows(pair.base_ref, s.tensor, s.base_tensor, s.base_rows),)), None


def _regrow_refusal(pair: BaseFacts, s: Shrunk) -> str | None:
    """Why the base's rows cannot be appended to the fine-tune's matrix as they are: the two matrices must
    differ only in their row count (every token of the fine-tune below the base's rows must also be the base's
    token at that id, the fine-tune's rows a prefix of the base's: :func:`_foreign_token`)."""
    mine, theirs = _info(pair, s.role), _info(pair, s.role, base=True)
    if mine is None or theirs is None:
        return "a matrix's header is not known"
    if len(mine.shape) != 2 or len(theirs.shape) != 2:
        return f"{s.tensor} {list(mine.shape)} and {s.base_tensor} {list(theirs.shape)} are not both matrices"
    if mine.shape[1] != theirs.shape[1]:
        return f"the hidden size differs ({s.tensor} {mine.shape[1]}, the base's {s.base_tensor} {theirs.shape[1]})"
    if mine.dtype != theirs.dtype:
        return f"the dtype differs ({s.tensor} {mine.dtype}, the base's {s.base_tensor} {theirs.dtype})"
    return None


class _ForeignOnce:
    """:func:`_foreign_token` for one pair, walked once for both matrices (a vocabulary of 262k ids)."""

    def __init__(self, pair: BaseFacts) -> None:
        self.pair = pair
        self.found: dict[int, str | None] = {}

    def why(self, rows: int) -> str | None:
        if rows not in self.found:
            self.found[rows] = _foreign_token(self.pair, rows)
        return self.found[rows]


def _foreign_token(pair: BaseFacts, rows: int) -> str | None:
    """Why the fine-tune's token ids below ``rows`` are not the base's, or None when every one is."""
    ours, theirs = pair.target.tokenizer, pair.base.tokenizer
    if ours is None or theirs is None:
        return "a tokenizer is missing, so whether the fine-tune's tokens are the base's is unknown"
    for token_id in ours.ids:
        if token_id >= rows:
            break
        text = ours.id_to_token(token_id)
        if text != theirs.id_to_token(token_id):
            return (f"the fine-tune's token {text!r} (id {token_id}) is not the base's token at that id: "
                    "its rows are not a prefix of the base's")
    return None


def _info(pair: BaseFacts, role: str, *, base: bool = False) -> TensorInfo | None:
    emb = (pair.base if base else pair.target).embeddings
    return None if emb is None else emb.input if role == "input" else emb.output


def _file_of(pair: BaseFacts, role: str, *, base: bool = False) -> str | None:
    emb = (pair.base if base else pair.target).embeddings
    info = None if emb is None else emb.input if role == "input" else emb.output
    return info.file if info is not None else None


@rule("HVA841", "base-special-id-changed", Severity.WARNING, scope=Scope.BASE, fix=FixAvailability.SOMETIMES)
def base_special_id_changed(pair: BaseFacts) -> Iterator[Hit]:
    """A bos/eos/pad id the base declares (config, generation_config, tokenizer) is null or different in the
    fine-tune.

    Why:
    `generate()` stops at `generation_config.eos_token_id`: with it null or changed, a fine-tune that emits
    the base's eos runs on to `max_new_tokens` (measured with transformers 5 on CPU). With `bos_token_id` null,
    `generate()` without a prompt raises "`bos_token_id` has to be defined when no `input_ids` are provided";
    a tokenizer without the base's pad token makes the collators refuse to pad. Trainers write such files:
    `"bos_token_id": null` where the base had an id.

    Fix:
    Copy the base's ids back into the fine-tune's file (`config.json`, `generation_config.json`,
    `tokenizer_config.json`), unless the change was meant (a new chat turn terminator as eos). `--fix` (with
    `--base`) restores an id the fine-tune's `config.json` / `generation_config.json` nulled or dropped, when the
    base's id is the same token in both tokenizers; an id changed to another is left to you.
    """
    for c in pair.specials:
        now = ("null" if c.null else "missing") if c.now is None else _one(c.now)
        fix, why = _restore_fix(pair, c)
        yield Hit(f"{c.file} {c.key}: the base has {_one(c.base)}, the fine-tune {now}",
                  Location(file=c.file, key=c.key), hint=why, fix=fix,
                  details={"role": c.role, "base_ids": list(c.base), "ids": list(c.now) if c.now else None,
                           "null": c.null, "base": pair.base_ref, "base_file": c.file})


def _restore_fix(pair: BaseFacts, c: SpecialChange) -> tuple[Fix | None, str | None]:
    """The fix that writes the base's id back where the fine-tune nulled or dropped it, or why there is none."""
    if c.now is not None:
        return None, ("the fine-tune declares another id, which may be meant (a new turn terminator): --fix "
                      "does not choose; copy the base's id back by hand if it was not")
    if c.file not in ("config.json", "generation_config.json"):
        return None, (f"Copy the base's {c.key} back into {c.file} (--fix restores ids in config.json and "
                      "generation_config.json only)")
    ours, theirs = pair.target.tokenizer, pair.base.tokenizer
    if ours is None or theirs is None:
        return None, ("Copy the base's id back by hand (a tokenizer is missing: whether the base's id is the same "
                      "token in the fine-tune is unknown)")
    for token_id in c.base:
        text = theirs.id_to_token(token_id)
        if text is None or ours.id_to_token(token_id) != text:
            return None, (f"the base's id {token_id} ({text!r}) is not the same token in the fine-tune's tokenizer: "
                          "set the id by hand")
    value: int | list[int] = c.base[0] if len(c.base) == 1 else list(c.base)
    return Fix(f"set {c.file} {c.key} to the base's {_one(c.base)}", Applicability.SAFE,
               (SetJsonKey(c.file, c.key, value),)), None


def _one(ids: tuple[int, ...]) -> str:
    return str(ids[0]) if len(ids) == 1 else str(list(ids))


@rule("HVA842", "base-chat-template-lost", Severity.WARNING, scope=Scope.BASE, fix=FixAvailability.SOMETIMES)
def base_chat_template_lost(pair: BaseFacts) -> Iterator[Hit]:
    """The base's tokenizer has a chat template and the fine-tune's has none.

    Why:
    `apply_chat_template` raises without a template, and servers (vLLM, TGI, llama.cpp after conversion) fall
    back to a generic format the model was not trained with: an instruct fine-tune answers badly or not at all.

    Fix:
    Save the tokenizer with the template (`tokenizer.chat_template = base_tokenizer.chat_template`), or copy
    the base's `chat_template.jinja` / `tokenizer_config.json` `chat_template` into the fine-tune: `--fix` (with
    `--base`) copies it into the file the base had it in.
    """
    from ..facts.pairs import Template

    if pair.template is not Template.LOST:
        return
    where = pair.template_file
    fix = why = None
    if where in TEMPLATE_FILES:
        fix = Fix(f"copy the base's chat template into {where}", Applicability.SAFE,
                  (CopyBaseChatTemplate(pair.base_ref, where),))
    else:
        why = (f"Copy the base's chat template into the fine-tune (--fix copies one from {' or '.join(TEMPLATE_FILES)} "
               f"only, not {where})")
    yield Hit("the base's tokenizer has a chat template; the fine-tune's has none",
              Location(file="tokenizer_config.json", key="chat_template"), hint=why, fix=fix,
              details={"base": pair.base_ref, "base_file": pair.template_file})


@rule("HVA843", "base-chat-template-changed", Severity.INFO, scope=Scope.BASE)
def base_chat_template_changed(pair: BaseFacts) -> Iterator[Hit]:
    """The fine-tune's chat template differs from the base's.

    Why:
    A fine-tune trained with its own template must be served with it, and one trained with the base's must
    keep it: a template changed by accident (a tool's default written over the base's) formats prompts
    differently from training.

    Fix:
    Nothing, if the new template is the one the fine-tune was trained with; otherwise restore the base's.
    """
    from ..facts.pairs import Template

    if pair.template is not Template.CHANGED:
        return
    yield Hit("the fine-tune's chat template differs from the base's",
              Location(file=pair.template_file or "tokenizer_config.json", key="chat_template"),
              details={"base": pair.base_ref})


@rule("HVA844", "base-padding-row-as-token", Severity.ERROR, scope=Scope.BASE_ROWS)
def base_padding_row_as_token(rows: BaseRows) -> Iterator[Hit]:
    """A token the fine-tune added sits in one of the base's padding rows, and its row is still the base's
    padding row, bit for bit: never initialised, never trained.

    Why:
    A padded base (Qwen, Gemma, Llama-3's reserved ids) has rows past `len(tokenizer)`; adding tokens there
    needs no resize, so nothing initialises them. The input row was never looked up in pre-training, and the
    output row was only ever pushed down: the new token embeds as noise (NaN losses when training with it,
    unsloth#1056) and is never generated.

    Fix:
    Initialise the new rows (the mean of the trained rows, as `resize_token_embeddings(mean_resizing=True)`
    does) and train them (`modules_to_save=["embed_tokens", "lm_head"]` or `trainable_token_indices`).
    """
    for side in rows.sides:
        if not side.padding_copies:
            continue
        ids = side.padding_copies
        yield Hit(f"{len(ids)} added token(s) still have the base's padding row in {side.tensor}: ids {_ids(ids)}",
                  Location(file=side.file, tensor=side.tensor, token_id=ids[0]),
                  details={"matrix": side.name, "ids": list(ids[:SHOW]), "count": len(ids),
                           "base_len": rows.base_len, "base_rows": rows.base_rows, "base": rows.base_ref,
                           "base_file": side.base_file, "base_tensor": side.base_tensor})


@rule("HVA845", "base-old-rows-changed", Severity.WARNING, scope=Scope.BASE_ROWS)
def base_old_rows_changed(rows: BaseRows) -> Iterator[Hit]:
    """Rows of tokens the base already had changed, while the rest of the matrix is the base's, bit for bit.

    Why:
    Adding tokens should write only the new rows. A matrix whose old rows are (almost) all the base's was not
    trained; when the few that changed are one run of consecutive ids, no longer than the tokens added, the
    resize wrote them (a hand-written mean initialisation that indexed the wrong rows, an off-by-n slice), and
    those tokens lost what pre-training taught them. Scattered changed rows are the tokens the data trained
    (an untied embedding row without gradient stays bit for bit the base's) and are not reported.

    Fix:
    Copy the base's rows back for those ids, and initialise only ids at or past `len(base tokenizer)`.
    """
    for side in rows.sides:
        if not side.old_changed:
            continue
        ids = side.old_changed
        yield Hit(f"{len(ids)} of {side.old_compared} compared row(s) of old tokens differ from the base's in "
                  f"{side.tensor} while the others are identical: ids {_ids(ids)}",
                  Location(file=side.file, tensor=side.tensor, token_id=ids[0]),
                  details={"matrix": side.name, "ids": list(ids[:SHOW]), "count": len(ids),
                           "compared": side.old_compared, "base": rows.base_ref, "base_file": side.base_file,
                           "base_tensor": side.base_tensor})
