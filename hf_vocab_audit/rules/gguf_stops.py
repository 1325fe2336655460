"""HVA984-HVA985: whether llama.cpp stops where the chat template a GGUF carries closes an assistant turn
(``check HF_DIR --target gguf``: the GGUF the converter will write; ``check model.gguf``: the one it is).

llama.cpp ends a reply at its end-of-generation set (``llama_vocab_is_eog``; ``facts.llama_cpp_eog`` builds it
as ``src/llama-vocab.cpp`` of llama-cpp-python 0.3.36 does), never at a stop string of the template. The template
is rendered once, in the project's budgeted sandbox (``dataset.chat_budget``): one user turn with the generation
prompt and the same turn with an assistant answer; the first token after the answer is the one the model was
taught to close its turn with.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.findings import Location, Severity
from ..core.options import TargetKind
from .registry import Hit, Scope, rule

if TYPE_CHECKING:
    from ..facts.checkpoint import Facts
    from ..facts.targets import TargetFacts

USER = "What is six times seven?"
ANSWER = "Six times seven is 42."


def after_answer(template: str, special: Mapping[str, str]) -> str | None:
    """What the template writes after an assistant's words (leading whitespace removed), rendered in the budgeted
    sandbox; None when it fails there (a refusal or its budget: HVA966/HVA980 under their targets) or the words
    are not in the conversation."""
    from ..dataset.chat_budget import RowMeter, compiled, input_chars, new_key, split_spend

    user = [{"role": "user", "content": USER}]
    chat = [*user, {"role": "assistant", "content": ANSWER}]
    try:
        with RowMeter(split_spend(new_key()), lambda: input_chars(chat)):
            tmpl: Any = compiled(template, plain=True)  # llama.cpp's own engine, not transformers
            prompt = str(tmpl.render(messages=user, tools=None, documents=None, add_generation_prompt=True, **special))
            full = str(tmpl.render(messages=chat, tools=None, documents=None, add_generation_prompt=False, **special))
    except Exception:  # noqa: BLE001 - an untrusted template's refusal or its budget
        return None
    start = len(prompt) if full.startswith(prompt) else 0
    at = full.rfind(ANSWER, start)
    return full[at + len(ANSWER):].lstrip() if at >= 0 else None


@dataclass(frozen=True)
class Closer:
    """The token that closes an assistant turn: its id and text, and ``whole``: a token the closing text starts
    with (else the first piece of ordinary text, ``of`` being the closing text)."""

    id: int
    token: str
    whole: bool
    of: str


def _special_map(facts: Facts) -> dict[str, str]:
    tok = facts.tokenizer
    return {f"{role}_token": content for role, (content, _) in tok.special_tokens.items() if content} if tok else {}


def _closers(after: str, whole: Mapping[str, int] | None, encode: Callable[[str], list[int]],
             text_of: Callable[[int], str | None], added: frozenset[int] = frozenset()) -> list[Closer]:
    """The special tokens the closing text starts with, in order (whitespace between them skipped): the model
    writes them one after another, and generation stops at the first that is end-of-generation (Command-R7B
    closes with ``<|END_RESPONSE|><|END_OF_TURN_TOKEN|>``, its eos the second). A GGUF (``whole``): the longest
    token llama.cpp matches whole at each step; an HF tokenizer: its ids while they are ``added`` tokens. With
    none, the first piece of the text (not one token: ``whole`` False)."""
    from ..facts.llama_cpp_eog import MAX_CLOSER, closing_token

    head = after[:MAX_CLOSER]
    out: list[Closer] = []
    if whole is not None:
        rest = head
        lengths = sorted({len(t) for t in whole if t}, reverse=True)
        while rest and len(out) < 8:
            text = closing_token(whole, rest, lengths)
            if text is None:
                break
            out.append(Closer(whole[text], text, True, head))
            rest = rest[len(text):].lstrip()
        if out:
            return out
    ids = encode(head)
    for i in ids[:8]:
        token = text_of(i) or ""
        if i in added:
            out.append(Closer(i, token, True, head))
        elif token.strip(" \n\u2581\u010a\u0120"):
            break
    return out or ([Closer(ids[0], text_of(ids[0]) or "", False, head)] if ids else [])


def _hit(closers: list[Closer], eog: Mapping[int, str], text_of: Callable[[int], str | None], file: str, what: str,
         ) -> Hit:
    closer = closers[0]
    listed = ", ".join(f"{i} {text_of(i)!r} ({why})" for i, why in sorted(eog.items())[:8]) or "none"
    piece = "" if closer.whole else (f" (the first piece of {closer.of.splitlines()[0][:40]!r}, which is not one "
                                     "token here)")
    return Hit(
        f"the chat template closes an assistant turn with {closer.token!r} (id {closer.id}){piece}, which {what}: "
        f"its end-of-generation ids are {listed}; llama-server and llama-cli write it and go on generating until "
        "n_predict",
        Location(file=file, key="tokenizer.ggml.eot_token_id", token=closer.token, token_id=closer.id),
        details={"turn_end_id": closer.id, "turn_end_token": closer.token, "eog_ids": sorted(eog),
                 "whole_token": closer.whole, "closing_tokens": [c.token for c in closers]},
    )


def _unread(facts: Facts, token_id: int) -> str:
    """Why an eos list that holds ``token_id`` does not reach the GGUF ("" when none holds it)."""
    notes = []
    generation = facts.generation
    if generation is not None and token_id in generation.special.ids.get("eos_token_id", ()):
        notes.append("generation_config.json's eos_token_id holds it, but the converter never reads that file")
    if token_id in facts.config.special.ids.get("eos_token_id", ()):
        notes.append("config.json's eos_token_id holds it, but the converter takes tokenizer_config.json's "
                     "eos_token first and config.json's only as one integer")
    return f" ({'; '.join(notes)})" if notes else ""


@rule("HVA984", "gguf-turn-end-not-end-of-generation", Severity.ERROR, scope=Scope.TARGET)
def gguf_turn_end_not_end_of_generation(t: TargetFacts) -> Iterator[Hit]:
    """The token the chat template closes an assistant turn with will not be one llama.cpp stops at in the GGUF
    `convert_hf_to_gguf.py` writes: llama-server and llama-cli generate past the answer until `n_predict`.

    Why:
    llama.cpp stops only at its end-of-generation set (`llama_vocab_is_eog`; built in `llama_vocab::impl::load`,
    `src/llama-vocab.cpp`, llama-cpp-python 0.3.36): `tokenizer.ggml.eos_token_id` (a tokenizer model's
    default without it), `eot_token_id`, `eom_token_id`, the FIM pad/repo/separator tokens, and every token
    whose text is one of a fixed list (`<|eot_id|>`, `<|im_end|>`, `<|end|>`, `<end_of_turn>`,
    `<|endoftext|>`, `</s>`, `<|eom_id|>`, `<|end_of_text|>`, ... whatever its type). The converter
    (`gguf.SpecialVocab`, `gguf-py/gguf/vocab.py`, the same sdist) writes eos from `tokenizer_config.json`'s
    `eos_token`, else `config.json`'s integer `eos_token_id`; it never reads `generation_config.json`, so a
    turn closer that vLLM stops at through `generation_config.json`'s `eos_token_id` list is not a stop for
    llama.cpp unless its text is on that list. The template is rendered in the budgeted sandbox (one user
    turn + an assistant answer) and the first token after the answer is checked. Cases measured with
    llama.cpp itself: `eog` in tests/data/gguf_verdicts.json.

    Fix:
    Make the closing token the tokenizer's `eos_token` (`tokenizer_config.json`) before converting, or set it
    as the GGUF's eot afterwards (`python gguf-py/gguf/scripts/gguf_new_metadata.py IN.gguf OUT.gguf
    --special-token eot "<closing token>"`); a closer that is not one token of the vocabulary must be added
    as a special token first.
    """
    facts = t.facts
    tok = facts.tokenizer
    if t.target is not TargetKind.GGUF or tok is None or t.path == "none":
        return
    from ..facts.llama_cpp_chat import converter_chat_template
    from ..facts.llama_cpp_eog import EOG_TEXTS, FIM_EOG_TEXTS, converter_special_ids, eog_set

    template = converter_chat_template(tok.folder)
    after = after_answer(template, _special_map(facts)) if template else None
    if not after:
        return
    closers = _closers(after, None, lambda text: list(tok.encode_many([text])[0]), tok.id_to_token,
                       frozenset(a.id for a in tok.added_tokens))
    if not closers:
        return
    texts = {*EOG_TEXTS, "<|plamo:eos|>", *(x for group in FIM_EOG_TEXTS.values() for x in group)}
    known = {text: i for text in texts if (i := tok.backend.token_to_id(text)) is not None}
    model = "gpt2" if t.path == "bpe" else "llama"
    eog = eog_set(known.get, tok.id_to_token, tok.length, converter_special_ids(tok.folder, tok.length), model)
    if not any(c.id in eog for c in closers):
        hit = _hit(closers, eog, tok.id_to_token, "tokenizer_config.json",
                   f"llama.cpp will not stop at in the GGUF convert_hf_to_gguf.py writes{_unread(facts, closers[0].id)}")
        yield Hit(hit.message, Location(file="tokenizer_config.json", key="eos_token", token=closers[0].token,
                                        token_id=closers[0].id), details=hit.details)


@rule("HVA985", "gguf-file-turn-end-not-end-of-generation", Severity.ERROR, scope=Scope.GGUF)
def gguf_file_turn_end_not_end_of_generation(facts: Facts) -> Iterator[Hit]:
    """The token this GGUF's chat template closes an assistant turn with is not one llama.cpp stops at:
    llama-server and llama-cli generate past the answer until `n_predict`.

    Why:
    The same as HVA984, for the `tokenizer.chat_template` a GGUF file carries: llama.cpp stops only at its
    end-of-generation set (`llama_vocab_is_eog`, `src/llama-vocab.cpp`, llama-cpp-python 0.3.36): the
    `tokenizer.ggml.eos_token_id` / `eot_token_id` / `eom_token_id` ids, the FIM pad/repo/separator tokens and
    the tokens whose text is on its fixed list (`<|im_end|>`, `<|eot_id|>`, `<end_of_turn>`, ... whatever their
    type). A template that ends turns with any other token (its own `<|turn_end|>`) has the model write it and
    go on. The closer is the first token after the answer as llama.cpp's tokenizer matches it (CONTROL,
    USER_DEFINED and UNKNOWN tokens whole, longest first). Measured with llama.cpp itself: `eog` in
    tests/data/gguf_verdicts.json.

    Fix:
    Set the closing token as the GGUF's eot (`python gguf-py/gguf/scripts/gguf_new_metadata.py IN.gguf OUT.gguf
    --special-token eot "<closing token>"`), or convert again with it as the tokenizer's `eos_token`.
    """
    gf = facts.gguf
    tok = facts.tokenizer
    if gf is None or tok is None or not gf.chat_template or not gf.tokens:
        return
    from ..facts.llama_cpp_eog import eog_ids, first_ids, whole_tokens

    after = after_answer(gf.chat_template, _special_map(facts))
    if not after:
        return
    tokens = gf.tokens

    def text_of(i: int) -> str | None:
        return tokens[i] if 0 <= i < len(tokens) else None

    ids = first_ids(tokens)
    closers = _closers(after, whole_tokens(tokens, gf.token_types, ids),
                       lambda text: list(tok.encode_many([text])[0]), text_of)
    if not closers:
        return
    eog = eog_ids(tokens, gf.special_ids, gf.tokenizer_model, ids)
    if not any(c.id in eog for c in closers):
        yield _hit(closers, eog, text_of, gf.file, "llama.cpp does not stop at")
