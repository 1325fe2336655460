"""What llama.cpp's built-in chat-template engine makes of a GGUF's ``tokenizer.chat_template``.

llama.cpp has two template engines. Its Jinja engine (``common/chat.cpp`` over its own Jinja interpreter;
llama-server's default, ``--jinja``) renders the template. Its built-in engine (``llama_chat_apply_template``
in ``src/llama.cpp``; llama-server ``--no-jinja``, ``common_chat_templates_apply_legacy``, and every caller of
the C API) never renders it: ``llm_chat_detect_template`` (``src/llama-chat.cpp``) looks for marker strings in
the template's text, in a fixed order, and writes the prompt with its own C++ code for the format found. So:

* a template with none of the markers is ``LLM_CHAT_TEMPLATE_UNKNOWN``: ``llama_chat_apply_template``
  returns -1 and llama-server ``--no-jinja`` fails the request ("this custom template is not supported, try
  using --jinja"); llama.cpp before ggml-org/llama.cpp#11533 fell back to ChatML instead, with one log line
  (#5628, #8160; ggml-org/llama.cpp#11443, #11866 for the Jinja side, which #11616 also sent to ChatML);
* a template that contains ``<|im_start|>`` is ChatML to it, whatever the template does with the marker: the
  built-in engine writes ``<|im_start|>{role}\\n{content}<|im_end|>\\n``, silently.

:data:`DETECTION` is ``llm_chat_detect_template`` of llama-cpp-python 0.3.36's vendored llama.cpp as a table
(first match wins); :func:`builtin_chatml` is its ChatML writer. Where ``llama_cpp`` is importable,
:func:`llama_cpp_apply` asks llama.cpp itself (``llama_cpp.llama_chat_apply_template`` through ctypes);
``scripts/gguf_verdicts.py`` records its answers for the test templates (``chat_templates`` in
``tests/data/gguf_verdicts.json``) and the tests keep this table equal to them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..errors import AuditError
from ..io.jsonfile import check_inside, read_bytes, read_json_object

UNKNOWN = "unknown"
CHATML = "chatml"
Has = Callable[[str], bool]


def _all(*needles: str) -> Callable[[str], bool]:
    return lambda t: all(n in t for n in needles)


def _any(*needles: str) -> Callable[[str], bool]:
    return lambda t: any(n in t for n in needles)


# (format, test) in the order of ``llm_chat_detect_template`` (src/llama-chat.cpp, llama-cpp-python 0.3.36); a
# template that is exactly a format's name (``LLM_CHAT_TEMPLATES``) is that format first. Branches that pick
# among variants of one family (Mistral v1/v3/v7, Llama-2, Granite, EXAONE) are one line each: the family is
# what decides whether the template is recognised.
DETECTION: tuple[tuple[str, Has], ...] = (
    ("phi4", _all("<|im_start|>", "<|im_sep|>")),
    ("smolvlm", _all("<|im_start|>", "<end_of_utterance>")),
    (CHATML, _all("<|im_start|>")),
    ("mistral/llama2", lambda t: t.startswith("mistral") or "[INST]" in t),
    ("phi3", _all("<|assistant|>", "<|end|>")),
    ("chatglm4", _all("[gMASK]<sop>")),
    ("exaone-moe/falcon3/glmedge", _all("<|assistant|>", "<|user|>")),
    ("glmedge", _all("<|{{ item['role'] }}|>", "<|begin_of_image|>")),
    ("zephyr", _all("<|user|>", "<|endoftext|>")),
    ("monarch", _all("bos_token + message['role']")),
    ("gemma", _all("<start_of_turn>")),
    ("orion", _all("'\\n\\nAssistant: ' + eos_token")),
    ("openchat", _all("GPT4 Correct ")),
    ("vicuna", _all("USER: ", "ASSISTANT: ")),
    ("deepseek", _all("### Instruction:", "<|EOT|>")),
    ("command-r", _all("<|START_OF_TURN_TOKEN|>", "<|USER_TOKEN|>")),
    ("llama3", _all("<|start_header_id|>", "<|end_header_id|>")),
    ("chatglm3", _all("[gMASK]sop")),
    ("minicpm", _all("<用户>")),
    ("deepseek2", _all("'Assistant: ' + message['content'] + eos_token")),
    ("deepseek3", _all("<｜Assistant｜>", "<｜User｜>", "<｜end▁of▁sentence｜>")),
    ("exaone", _all("[|system|]", "[|assistant|]", "[|endofturn|]")),
    ("rwkv-world", _any("rwkv-world", "{{- 'User: ' + message['content']|trim + '\\n\\n' -}}")),
    ("granite", _all("<|start_of_role|>")),
    ("gigachat", _all("message['role'] + additional_special_tokens[0] + message['content'] + "
                      "additional_special_tokens[1]")),
    ("megrez", _all("<|role_start|>")),
    ("yandex", _all(" Ассистент:")),
    ("bailing", _all("<role>ASSISTANT</role>", "'HUMAN'")),
    ("bailing-think", _all("<role>ASSISTANT</role>", '"HUMAN"', "<think>")),
    ("bailing2", _all("<role>ASSISTANT</role>", "<role>HUMAN</role>", "<|role_end|>")),
    ("llama4", _all("<|header_start|>", "<|header_end|>")),
    ("dots1", _all("<|endofuserprompt|>")),
    ("hunyuan-moe", _all("<|extra_0|>", "<|extra_4|>")),
    ("gpt-oss", _all("<|start|>", "<|channel|>")),
    ("hunyuan-vl", _all("<｜hy_Assistant｜>", "<｜hy_begin▁of▁sentence｜>")),
    ("hunyuan-dense", _all("<｜hy_Assistant｜>", "<｜hy_place▁holder▁no▁3｜>")),
    ("kimi-k2", _all("<|im_assistant|>assistant<|im_middle|>")),
    ("seed_oss", _all("<seed:bos>")),
    ("grok-2", _all("'Assistant: '  + message['content'] + '<|separator|>")),
    ("pangu-embedded", _all("[unused9]系统：[unused10]")),
    ("solar-open", _all("<|begin|>", "<|end|>", "<|content|>")),
)
# ``LLM_CHAT_TEMPLATES``: a template that is exactly one of these names is that format.
NAMES = frozenset({
    "chatml", "llama2", "llama2-sys", "llama2-sys-bos", "llama2-sys-strip", "mistral-v1", "mistral-v3",
    "mistral-v3-tekken", "mistral-v7", "mistral-v7-tekken", "phi3", "phi4", "falcon3", "zephyr", "monarch", "gemma",
    "orion", "openchat", "vicuna", "vicuna-orca", "deepseek", "deepseek2", "deepseek3", "deepseek-ocr", "command-r",
    "llama3", "chatglm3", "chatglm4", "glmedge", "minicpm", "exaone3", "exaone4", "exaone-moe", "rwkv-world",
    "granite", "granite-4.0", "granite-4.1", "gigachat", "megrez", "yandex", "bailing", "bailing-think", "bailing2",
    "llama4", "smolvlm", "hunyuan-moe", "gpt-oss", "hunyuan-dense", "hunyuan-vl", "kimi-k2", "seed_oss", "grok-2",
    "pangu-embedded", "solar-open",
})


def detect(template: str) -> str:
    """The format ``llm_chat_detect_template`` picks for ``template``, or :data:`UNKNOWN`."""
    if template in NAMES:
        return template
    return next((name for name, test in DETECTION if test(template)), UNKNOWN)


def builtin_chatml(messages: list[dict[str, str]], add_assistant: bool) -> str:
    """What the built-in engine writes for ChatML (``llm_chat_apply_template``, ``LLM_CHAT_TEMPLATE_CHATML``)."""
    out = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
    return out + ("<|im_start|>assistant\n" if add_assistant else "")


@dataclass(frozen=True)
class Applied:
    """llama.cpp's own answer: the return value of ``llama_chat_apply_template`` and the prompt it wrote."""

    result: int
    text: str


def llama_cpp_apply(template: str, messages: list[dict[str, str]], add_assistant: bool) -> Applied | None:
    """``llama_chat_apply_template`` of the installed llama-cpp-python, or None where it is not importable.

    It only matches strings in the template (no Jinja is run), so an untrusted template is safe to pass."""
    try:
        import ctypes

        import llama_cpp  # a fixed module name: the installed llama-cpp-python, never one the checkpoint names
    except Exception:  # noqa: BLE001 - not installed, or its shared library does not load (RuntimeError, OSError)
        return None
    chat = (llama_cpp.llama_chat_message * len(messages))(
        *[llama_cpp.llama_chat_message(m["role"].encode(), m["content"].encode()) for m in messages])
    size = 4096
    buf = ctypes.create_string_buffer(size)
    result = int(llama_cpp.llama_chat_apply_template(template.encode(), chat, len(messages), add_assistant, buf, size))
    if result > size:
        size = result
        buf = ctypes.create_string_buffer(size)
        result = int(llama_cpp.llama_chat_apply_template(template.encode(), chat, len(messages), add_assistant, buf,
                                                          size))
    text = buf.raw[: max(result, 0)].decode("utf-8", "replace")
    return Applied(result, text)


def converter_chat_template(folder: Path) -> str | None:
    """The template ``convert_hf_to_gguf.py`` writes as ``tokenizer.chat_template`` (``gguf.SpecialVocab.
    _try_load_from_config_json``, ``gguf-py/gguf/vocab.py``): ``tokenizer_config.json``'s ``chat_template``, else
    ``chat_template.jinja``, else ``chat_template.json``'s; a list of named templates keeps its "default"."""
    value: object = None
    config = folder / "tokenizer_config.json"
    try:
        if config.is_file():
            value = read_json_object(config).get("chat_template")
        jinja = folder / "chat_template.jinja"
        if value is None and jinja.is_file():
            check_inside(jinja, folder)
            value = read_bytes(jinja, 16 * 1024 * 1024).decode("utf-8", "replace")  # the tokenizer facts' bound
        elif value is None and (folder / "chat_template.json").is_file():
            value = read_json_object(folder / "chat_template.json").get("chat_template")
    except AuditError:
        return None
    if isinstance(value, list):
        value = next((t.get("template") for t in value if isinstance(t, dict) and t.get("name") == "default"), None)
    return value if isinstance(value, str) else None
