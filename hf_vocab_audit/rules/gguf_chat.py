"""HVA927-HVA928: what llama.cpp's built-in chat-template engine makes of the chat template a GGUF carries
(``check HF_DIR --target gguf``: the template the converter will write; ``check model.gguf``: the one it has).

The built-in engine (``llama_chat_apply_template``: llama-server ``--no-jinja`` and every caller of the C API)
does not run the template: it finds a format by marker strings (``facts.llama_cpp_chat.DETECTION``, llama.cpp
as vendored by llama-cpp-python 0.3.36) and writes that format itself. Where ``llama_cpp`` is importable the
verdict is llama.cpp's own (``llama_cpp.llama_chat_apply_template``); otherwise the table decides. The
template's own rendering runs in the project's budgeted sandbox (``dataset.chat_budget``), never in
transformers' unbudgeted ``apply_chat_template``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.findings import Location, Severity
from ..core.options import TargetKind
from .registry import Hit, Scope, rule

if TYPE_CHECKING:
    from ..facts.checkpoint import Facts
    from ..facts.targets import TargetFacts

# The conversation both engines are given: a system turn (so a template's default system prompt, Qwen2.5's,
# is not in the way) and a user turn, without the generation prompt (a reasoning template's "<think>" opener
# after "<|im_start|>assistant" is its own business; the turns' framing is what a misread changes).
MESSAGES = ({"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": "Hello"})


@dataclass(frozen=True)
class BuiltinVerdict:
    """What the built-in engine does with a template, and what the template itself writes."""

    format: str  # facts.llama_cpp_chat.detect(): the format found, or "unknown"
    refused: bool  # llama_chat_apply_template returns -1
    builtin: str | None  # the prompt the built-in engine writes (ChatML only, without llama.cpp)
    rendered: str | None  # the template's own prompt (a leading bos_token removed); None: not rendered
    by_llama_cpp: bool  # decided by llama.cpp itself

    @property
    def misread_as_chatml(self) -> bool:
        return (self.format == "chatml" and self.builtin is not None and self.rendered is not None
                and self.builtin != self.rendered)


def _render(template: str, facts: Facts) -> str | None:
    """The template's own prompt for :data:`MESSAGES`, in the budgeted sandbox; None when it fails there."""
    from ..dataset.chat_budget import RowMeter, compiled, input_chars, new_key, split_spend

    tok = facts.tokenizer
    special = {f"{role}_token": content for role, (content, _) in tok.special_tokens.items() if content} if tok else {}
    messages = [dict(m) for m in MESSAGES]
    try:
        with RowMeter(split_spend(new_key()), lambda: input_chars(messages)):
            tmpl: Any = compiled(template, plain=True)  # llama.cpp's own engine, not transformers
            text = str(tmpl.render(messages=messages, tools=None, documents=None, add_generation_prompt=False,
                                   **special))
    except Exception:  # noqa: BLE001 - an untrusted template's refusal or its budget: other rules report those
        return None
    bos = special.get("bos_token")
    return text[len(bos):] if bos and text.startswith(bos) else text


def builtin_verdict(template: str, facts: Facts) -> BuiltinVerdict:
    from ..facts.llama_cpp_chat import CHATML, UNKNOWN, builtin_chatml, detect, llama_cpp_apply

    fmt = detect(template)
    messages = [dict(m) for m in MESSAGES]
    applied = llama_cpp_apply(template, messages, False)
    if applied is not None:
        refused, builtin = applied.result < 0, (applied.text if applied.result >= 0 else None)
    else:
        refused, builtin = fmt == UNKNOWN, (builtin_chatml(messages, False) if fmt == CHATML else None)
    rendered = _render(template, facts) if fmt == CHATML and not refused else None
    return BuiltinVerdict(fmt, refused, builtin, rendered, applied is not None)


def _hits(v: BuiltinVerdict, file: str, key: str | None) -> Iterator[Hit]:
    who = "llama.cpp itself (llama_chat_apply_template)" if v.by_llama_cpp else "llama.cpp's detection table"
    details = {"format": v.format, "decided_by": "llama_cpp" if v.by_llama_cpp else "table"}
    if v.refused:
        yield Hit(
            "llama.cpp's built-in template engine (llama-server --no-jinja, llama_chat_apply_template) recognises "
            "none of its formats in this chat template: it returns -1 and llama-server fails every chat request "
            "(\"this custom template is not supported, try using --jinja\"); llama.cpp builds before "
            f"ggml-org/llama.cpp#11533 used ChatML instead, silently (decided by {who})",
            Location(file=file, key=key), details=details)
    elif v.misread_as_chatml and v.builtin is not None and v.rendered is not None:
        at = next((i for i, (a, b) in enumerate(zip(v.builtin, v.rendered, strict=False)) if a != b),
                  min(len(v.builtin), len(v.rendered)))
        yield Hit(
            "llama.cpp's built-in template engine (llama-server --no-jinja, llama_chat_apply_template) takes this "
            "chat template for ChatML (it contains <|im_start|>) and writes ChatML silently, which the template "
            f"does not: the prompts differ at character {at} (built-in {v.builtin[at:at + 40]!r}, the template "
            f"{v.rendered[at:at + 40]!r}; decided by {who})",
            Location(file=file, key=key), details=details | {"differs_at": at})


@rule("HVA927", "gguf-chat-template-builtin-engine", Severity.WARNING, scope=Scope.TARGET)
def gguf_chat_template_builtin_engine(t: TargetFacts) -> Iterator[Hit]:
    """llama.cpp's built-in chat-template engine will not write this chat template's prompt: it recognises none
    of its formats in it (refused; older builds: ChatML), or it takes it for ChatML and writes ChatML silently.

    Why:
    `convert_hf_to_gguf.py` copies the chat template into the GGUF (`tokenizer.chat_template`). llama.cpp's
    built-in engine (`llama_chat_apply_template`, `src/llama.cpp`; llama-server `--no-jinja` through
    `common_chat_templates_apply_legacy`) never runs it: `llm_chat_detect_template` (`src/llama-chat.cpp`,
    llama-cpp-python 0.3.36) looks for marker strings in a fixed order and writes the format found with its
    own code. A template with none of them is refused ("this custom template is not supported, try using
    --jinja"; before ggml-org/llama.cpp#11533 it fell back to ChatML with one log line, #5628, #8160,
    #11443); a template containing `<|im_start|>` is ChatML to it whatever it does with the marker. Only
    llama.cpp's Jinja engine (llama-server's default) renders such a template. Decided by llama.cpp itself
    where `llama_cpp` is importable, else by the detection table (`facts/llama_cpp_chat.py`), both recorded
    in tests/data/gguf_verdicts.json (`chat_templates`).

    Fix:
    Serve with llama.cpp's Jinja engine (`llama-server --jinja`, the default), or use the model family's
    own template (Llama-3, ChatML, Gemma, Mistral are recognised).
    """
    if t.target is not TargetKind.GGUF or t.facts.tokenizer is None or t.path == "none":
        return
    from ..facts.llama_cpp_chat import converter_chat_template

    template = converter_chat_template(t.facts.tokenizer.folder)
    if template:
        yield from _hits(builtin_verdict(template, t.facts), "tokenizer_config.json", "chat_template")


@rule("HVA928", "gguf-file-chat-template-builtin-engine", Severity.WARNING, scope=Scope.GGUF)
def gguf_file_chat_template_builtin_engine(facts: Facts) -> Iterator[Hit]:
    """llama.cpp's built-in chat-template engine will not write this GGUF's chat template's prompt: it
    recognises none of its formats in it (refused; older builds: ChatML), or takes it for ChatML silently.

    Why:
    The same as HVA927, for the `tokenizer.chat_template` a GGUF file carries: llama.cpp's built-in engine
    (`llama_chat_apply_template`; llama-server `--no-jinja`) picks a format by marker strings
    (`llm_chat_detect_template`, `src/llama-chat.cpp`, llama-cpp-python 0.3.36) instead of running the
    template. Decided by llama.cpp itself where `llama_cpp` is importable, else by the detection table.

    Fix:
    Serve with llama.cpp's Jinja engine (`llama-server --jinja`, the default), or rewrite the GGUF with the
    model family's own template.
    """
    gf = facts.gguf
    if gf is None or not gf.chat_template:
        return
    yield from _hits(builtin_verdict(gf.chat_template, facts), gf.file, "tokenizer.chat_template")
