"""HVA968-HVA969: whether vLLM's output parsers (``--target vllm --tool-call-parser NAME --reasoning-parser NAME``)
can find the strings they look up in this tokenizer: each one token, and one that decoding keeps in the text.

The parsers and what they look up are ``facts.consumers.VLLM_PARSERS`` (vLLM 0.10.2, read in its source).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..core.findings import Location, Severity
from ..core.options import TargetKind
from ..facts.consumers import VLLM
from .registry import Hit, Scope, rule

if TYPE_CHECKING:
    from ..facts.targets import TargetFacts
    from ..facts.tokenizer import TokenizerFacts


def _token_id(tok: TokenizerFacts, text: str) -> int | None:
    """``text``'s id as ``tokenizer.get_vocab().get(text)`` gives it (added tokens included), else None."""
    for added in tok.added_tokens:
        if added.content == text:
            return added.id
    try:
        found = tok.backend.token_to_id(text)
    except Exception:  # noqa: BLE001 - the tokenizer library on an untrusted tokenizer: not found
        return None
    return found if isinstance(found, int) else None


def _tokenizer_file(tok: TokenizerFacts) -> str:
    return "tokenizer.json" if "tokenizer.json" in tok.files or not tok.files else tok.files[0]


@rule("HVA968", "vllm-parser-token-missing", Severity.ERROR, scope=Scope.TARGET)
def vllm_parser_token_missing(t: TargetFacts) -> Iterator[Hit]:
    """A string the vLLM parser named by `--tool-call-parser` / `--reasoning-parser` looks up is not a token
    of this tokenizer: the parser raises when vLLM builds it.

    Why:
    Read in vLLM 0.10.2 (not run: vLLM does not run on the project's CPU machines). These parsers take
    each string's id with `self.vocab.get(...)` (the tokenizer's `get_vocab()`, added tokens included)
    and raise `RuntimeError` when one is None: `mistral`
    (`vllm/entrypoints/openai/tool_parsers/mistral_tool_parser.py:77-88`, `[TOOL_CALLS]`, "could not
    locate the tool call token in the tokenizer"), `deepseek_r1` and `qwen3`
    (`vllm/reasoning/deepseek_r1_reasoning_parser.py:40-45`, `qwen3_reasoning_parser.py:39-45`,
    `<think>` / `</think>`, "could not locate think start/end tokens in the tokenizer"). vLLM builds the
    parser for each chat request that uses it, so every such request fails. `hermes` looks nothing up
    that can raise (it encodes `<tool_call>`, `hermes_tool_parser.py:55-58`) and is not reported here.

    Fix:
    Serve with the parser that matches the model's output format, or add the strings as tokens the model
    was trained to emit (`tokenizer.add_tokens([...])` alone does not teach the model to emit them).
    """
    tok = t.facts.tokenizer
    if t.target is not TargetKind.VLLM or tok is None:
        return
    for parser in t.parsers:
        missing = [s for s in parser.tokens if _token_id(tok, s) is None] if parser.raises else []
        if missing:
            yield Hit(
                f"vLLM {VLLM.version} --{parser.kind.value} {parser.name} looks up {', '.join(map(repr, missing))} "
                f"in the tokenizer and finds no such token: it raises RuntimeError (\"{parser.raises}\", "
                f"{parser.file}) on every chat request that uses it",
                Location(file=_tokenizer_file(tok), token=missing[0]),
                details={"parser": parser.name, "flag": f"--{parser.kind.value}", "missing": missing,
                         "looks_up": list(parser.tokens), "source": parser.file},
            )


@rule("HVA969", "vllm-parser-token-stripped", Severity.WARNING, scope=Scope.TARGET)
def vllm_parser_token_stripped(t: TargetFacts) -> Iterator[Hit]:
    """A string the vLLM parser named by `--tool-call-parser` / `--reasoning-parser` matches in the decoded text
    is a *special* added token, which decoding removes before the parser reads it: nothing is parsed, silently.

    Why:
    vLLM decodes with `skip_special_tokens=True` unless the request or the parser says otherwise, and a
    special added token is dropped from the text (vLLM#9304). Read in vLLM 0.10.2: the `deepseek_r1` and
    `qwen3` reasoning parsers partition the decoded text on `<think>` / `</think>` in their non-streaming
    `extract_reasoning_content` (`deepseek_r1_reasoning_parser.py:156-172`, `qwen3_reasoning_parser.py:
    133-147`) and change nothing in the request: without the strings deepseek_r1 returns the whole
    output as reasoning, qwen3 as content. The `hermes` tool-call parser searches the text for
    `<tool_call>` (`extract_tool_calls`, `hermes_tool_parser.py:108-111`) and overrides no
    `adjust_request` (the base's returns the request unchanged, `abstract_tool_parser.py:41-46`): a
    special `<tool_call>` means no tool call is ever reported. `mistral` is not affected: its
    `adjust_request` sets `skip_special_tokens=False` when tools are in play and the tokenizer is not a
    MistralTokenizer (`mistral_tool_parser.py:90-101`).

    Fix:
    Save the strings as non-special added tokens (`special: false` in `tokenizer.json`'s `added_tokens`,
    as Qwen3 and DeepSeek-R1 do), or have clients send `skip_special_tokens: false`.
    """
    tok = t.facts.tokenizer
    if t.target is not TargetKind.VLLM or tok is None:
        return
    special = {a.content: a.id for a in tok.added_tokens if a.special}
    for parser in t.parsers:
        stripped = [s for s in parser.tokens if s in special] if parser.strips else []
        if stripped:
            yield Hit(
                f"vLLM {VLLM.version} --{parser.kind.value} {parser.name} matches {', '.join(map(repr, stripped))} "
                "in the decoded text, but they are special added tokens that skip_special_tokens (on by default) "
                f"removes first: its non-streaming {parser.reads} never finds them and {parser.unparsed}",
                Location(file=_tokenizer_file(tok), token=stripped[0], token_id=special[stripped[0]]),
                details={"parser": parser.name, "flag": f"--{parser.kind.value}", "stripped": stripped,
                         "source": parser.file},
            )


__all__ = ["vllm_parser_token_missing", "vllm_parser_token_stripped"]
