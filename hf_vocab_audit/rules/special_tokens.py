"""HVA2xx: special tokens, added tokens and the chat template."""

from __future__ import annotations

from collections.abc import Iterator

from ..core.findings import Location, Severity
from ..core.fixes import Applicability, Fix, FixAvailability, SetJsonKey, SetPadToken, SetSpecialTokenId
from ..facts import Facts
from ..facts.pad_candidate import pad_candidate
from ..facts.requirements import Requirement
from .registry import Hit, rule

ROLE_KEYS = {"bos": "bos_token_id", "eos": "eos_token_id", "pad": "pad_token_id"}


def _declared(facts: Facts) -> Iterator[tuple[str, str, str, str, tuple[int, ...], str | None]]:
    """(source, file, key, role, ids) for every special-token id the checkpoint declares."""
    tok = facts.tokenizer
    if tok is not None:
        tfile = "tokenizer_config.json" if tok.source == "tokenizers" else "tokenizer"
        for role, (content, token_id) in sorted(tok.special_tokens.items()):
            if token_id is not None:
                yield "tokenizer", tfile, f"{role}_token", role, (token_id,), content
    for source, file, facts_part in (
        ("config", "config.json", facts.config),
        ("generation_config", "generation_config.json", facts.generation),
    ):
        if facts_part is None:
            continue
        for key, ids in sorted(facts_part.special.ids.items()):
            yield source, file, facts_part.special.keys[key], key.removesuffix("_token_id"), ids, None


@rule("HVA201", "special-token-id-out-of-range", Severity.ERROR, requires=(Requirement.INPUT_EMBEDDING,), fix=FixAvailability.SOMETIMES)
def special_token_id_out_of_range(facts: Facts) -> Iterator[Hit]:
    """A special-token id in the tokenizer, config or generation config has no embedding row.

    Why:
    bos/eos/pad/decoder-start ids are fed to the model by collators, `generate()` and encoder-decoder
    shifting. An id outside `0..rows-1` crashes the embedding lookup (`index out of range in self`,
    `device-side assert`), and `pad_token_id >= vocab_size` stops model construction
    (`Padding_idx must be within num_embeddings`).

    Fix:
    Point the id at the right token (usually the tokenizer's), or grow the embeddings if the token
    is real. `--fix --unsafe-fixes` syncs config ids to the tokenizer.
    """
    rows = facts.input_rows
    assert rows is not None
    for source, file, key, role, ids, content in _declared(facts):
        bad = [i for i in ids if i < 0 or i >= rows]
        if not bad:
            continue
        tok_id = (facts.tokenizer.special_tokens.get(role, (None, None))[1]) if facts.tokenizer else None
        fix = None
        if source != "tokenizer" and tok_id is not None and 0 <= tok_id < rows:
            fix = Fix(
                f"set {file} {key} to the tokenizer's {role} id {tok_id}",
                Applicability.UNSAFE,
                (SetJsonKey(file, key, tok_id),),
            )
        what = f"{content!r} " if content else ""
        yield Hit(
            f"{file} {key} {what}= {ids[0] if len(ids) == 1 else list(ids)} is outside the {rows} "
            f"embedding rows (bad: {bad})",
            Location(file=file, key=key, token=content, token_id=bad[0]),
            fix=fix,
            details={"source": source, "role": role, "ids": list(ids), "rows": rows},
        )


@rule("HVA202", "special-token-id-disagreement", Severity.WARNING, fix=FixAvailability.SOMETIMES)
def special_token_id_disagreement(facts: Facts) -> Iterator[Hit]:
    """The tokenizer, config.json and generation_config.json name different bos/eos/pad ids.

    Why:
    Training uses the tokenizer's ids; `generate()` stops on generation_config's eos; some code reads
    config.json. When they differ the model learns to end turns with one token and generation waits for
    another (Llama-3-Instruct changed eos from 128001 to 128009: endless generations in vLLM).

    Fix:
    Make all three agree with the token the model was trained to emit (generation_config may list
    several eos ids; it must include the tokenizer's). `--fix --unsafe-fixes` syncs them to the tokenizer.
    """
    by_role: dict[str, list[tuple[str, str, str, tuple[int, ...], str | None]]] = {}
    for source, file, key, role, ids, content in _declared(facts):
        if role in ROLE_KEYS:
            by_role.setdefault(role, []).append((source, file, key, ids, content))
    for role, entries in sorted(by_role.items()):
        sets = [set(e[3]) for e in entries]
        disagree = False
        for i in range(len(entries)):
            for j in range(i + 1, len(entries)):
                a, b = sets[i], sets[j]
                if not (a <= b or b <= a):
                    disagree = True
        if not disagree:
            continue
        values = "; ".join(
            f"{file} {key}" + (f" {content!r}" if content else "") + f" = {ids[0] if len(ids) == 1 else list(ids)}"
            for _source, file, key, ids, content in entries
        )
        tok_entry = next((e for e in entries if e[0] == "tokenizer"), None)
        fix = None
        if tok_entry is not None:
            fix = Fix(
                f"set config and generation_config {role}_token_id to the tokenizer's {tok_entry[3][0]}",
                Applicability.UNSAFE,
                (SetSpecialTokenId(role, tok_entry[3][0]),),
            )
        first = next(e for e in entries if e[0] != "tokenizer")
        yield Hit(
            f"{role} ids disagree: {values}",
            Location(file=first[1], key=first[2]),
            fix=fix,
            details={"role": role, "values": [{"file": e[1], "key": e[2], "ids": list(e[3])} for e in entries]},
        )


@rule("HVA203", "missing-pad-token", Severity.WARNING, requires=(Requirement.TOKENIZER,), fix=FixAvailability.ALWAYS)
def missing_pad_token(facts: Facts) -> Iterator[Hit]:
    """The tokenizer has no pad token.

    Why:
    Batching sequences of different lengths needs one: `tokenizer(batch, padding=True)` raises, and the
    common workaround `pad_token = eos_token` makes collators mask every eos label, so the model never
    learns to stop (see HVA204).

    Fix:
    Use a special token of this tokenizer that is never emitted as pad (the finding names one when the
    tokenizer has one), or add a `<pad>` token and grow the embeddings; set `pad_token_id` in config and
    generation_config to match.
    """
    tok = facts.required_tokenizer()
    if "pad" in tok.special_tokens:
        return
    yield Hit(
        "the tokenizer defines no pad_token: padded batches need one",
        Location(file="tokenizer_config.json", key="pad_token"),
        hint=_pad_advice(facts),
        fix=Fix("set a reserved special token (or a new <pad>) as pad", Applicability.UNSAFE, (SetPadToken(),)),
    )


@rule("HVA204", "pad-token-is-eos", Severity.WARNING, requires=(Requirement.TOKENIZER,), fix=FixAvailability.ALWAYS)
def pad_token_is_eos(facts: Facts) -> Iterator[Hit]:
    """The pad token is the eos token.

    Why:
    Data collators set labels of pad positions to -100. When pad == eos, every eos label is masked too:
    the model is never trained to emit eos and generates until the length limit.

    Fix:
    Use a distinct pad token (an unused special token of this tokenizer, or a new `<pad>` with resized
    embeddings).
    """
    tok = facts.required_tokenizer()
    pad = tok.special_tokens.get("pad")
    eos = tok.special_tokens.get("eos")
    if not pad or not eos or pad[1] is None or pad[1] != eos[1]:
        return
    yield Hit(
        f"pad_token {pad[0]!r} is the eos_token (id {pad[1]}): collators will mask every eos label",
        Location(file="tokenizer_config.json", key="pad_token", token=pad[0], token_id=pad[1]),
        hint=_pad_advice(facts),
        fix=Fix("set a distinct pad token", Applicability.UNSAFE, (SetPadToken(),)),
    )


def _pad_advice(facts: Facts) -> str:
    """The pad token to use, named only when this tokenizer has it (the one ``--fix --unsafe-fixes`` sets)."""
    choice = pad_candidate(facts)
    if choice is not None:
        content, token_id = choice
        return (f"use {content!r} (id {token_id}), a special token nothing else uses, as pad: "
                "`tokenizer.pad_token = ...`, and the same id as `pad_token_id` in config.json and "
                "generation_config.json (`--fix --unsafe-fixes` does all three)")
    return ("this tokenizer has no unused special token to pad with: add a `<pad>` special token and grow the "
            "embeddings (`--fix --unsafe-fixes` does both: a copy with one more row), then set `pad_token_id` "
            "in config.json and generation_config.json to its id")


def _template_hits(facts: Facts) -> Iterator[tuple[str, list[int], int | None]]:
    tok = facts.required_tokenizer()
    rows = facts.input_rows
    for text, ids in tok.template_markers:
        yield text, list(ids), rows


@rule("HVA205", "chat-template-token-split", Severity.WARNING, requires=(Requirement.CHAT_TEMPLATE,))
def chat_template_token_split(facts: Facts) -> Iterator[Hit]:
    """A control string in the chat template is not a single token.

    Why:
    `<|im_start|>`-style markers are meant to be one special token the model was trained on. When the
    tokenizer lacks it, the template's text is split into ordinary pieces: the model sees a different
    sequence than in training, and fine-tuning learns the wrong markers.

    Fix:
    Add the marker as a special token (`add_special_tokens`) and grow the embeddings, or use the chat
    template that belongs to this tokenizer.
    """
    tok = facts.required_tokenizer()
    for text, ids, _rows in _template_hits(facts):
        if len(ids) == 1:
            continue
        yield Hit(
            f"chat template marker {text!r} encodes to {len(ids)} tokens {ids}, not one",
            Location(file=tok.chat_template_file, token=text),
            details={"marker": text, "ids": ids},
        )


@rule("HVA206", "chat-template-token-out-of-range", Severity.ERROR, requires=(Requirement.CHAT_TEMPLATE, Requirement.INPUT_EMBEDDING))
def chat_template_token_out_of_range(facts: Facts) -> Iterator[Hit]:
    """A control string in the chat template encodes to an id with no embedding row.

    Why:
    Every chat-formatted example contains the template's markers. If one encodes past the embedding
    rows, the first `apply_chat_template` batch crashes with `index out of range` (a device-side assert
    on a GPU).

    Fix:
    Grow the embeddings to cover the marker's id (`--fix`), or use the template of this model.
    """
    tok = facts.required_tokenizer()
    for text, ids, rows in _template_hits(facts):
        bad = [i for i in ids if rows is not None and i >= rows]  # rows: HVA206 requires the embedding
        if not bad:
            continue
        yield Hit(
            f"chat template marker {text!r} encodes to id {bad[0]} >= the {rows} embedding rows",
            Location(file=tok.chat_template_file, token=text, token_id=bad[0]),
            details={"marker": text, "ids": ids, "rows": rows},
        )


@rule("HVA207", "added-token-conflict", Severity.ERROR, requires=(Requirement.TOKENIZER,))
def added_token_conflict(facts: Facts) -> Iterator[Hit]:
    """Added tokens are declared with duplicate or conflicting ids.

    Why:
    tokenizer.json and tokenizer_config.json's `added_tokens_decoder` must agree. When one token has two
    ids, or one id two tokens, the tokenizer that loads keeps one of them: text encodes to an id the model
    was not trained with, and decoding prints the wrong token.

    Fix:
    Re-save the tokenizer from a clean load (`AutoTokenizer.from_pretrained(...).save_pretrained(...)`)
    after deciding which id each token must have.
    """
    tok = facts.required_tokenizer()
    for conflict in tok.conflicts:
        yield Hit(
            conflict.description,
            Location(file=conflict.file, token=conflict.contents[0], token_id=conflict.ids[0]),
            details={"ids": list(conflict.ids), "contents": list(conflict.contents)},
        )
