"""Hostile-input catalogue, group "strings for readers": checkpoints whose token strings, tensor names and
chat template are written to be read by the people a report reaches (a pull-request comment, a job
summary, a code-scanning page, a CI log): mentions, images, links, raw HTML, Markdown fences, table pipes,
bidirectional overrides and zero-width characters.

The audit must still judge the checkpoint (a token added past the embeddings still fails the gate), and
the report must stay parseable; what each format makes of the strings is checked on the rendered output
by tests/formats/test_markdown_hostile.py and tests/formats/test_hostile_strings.py.
"""

from __future__ import annotations

from pathlib import Path

from malformed import TOKENIZER_CONFIG, case, embedding_header, safetensors_bytes, tokenizer_json, write_json

# One string holding every construct a Markdown or HTML reader, GitHub's mention and autolink filters or
# a bidi-aware display would act on.
READER_HOSTILE = ("@everyone @octo-org/owners ![x](http://e/x.png) [a](javascript:alert(1)) "
                  "<img src=x onerror=alert(1)> https://evil.example www.evil.example ``` `` | \\ &amp; "
                  "\u202eevil\u202c \u2066iso\u2069 zero\u200bwidth \ufeff\u061c line\u2028sep #1 :tada:")


def _added_token(folder: Path, content: str) -> None:
    tok = tokenizer_json()
    tok["added_tokens"].append({"id": len(tok["model"]["vocab"]), "content": content, "single_word": False,
                                "lstrip": False, "rstrip": False, "normalized": False, "special": True})
    write_json(folder / "tokenizer.json", tok)


@case("strings for readers", exit_codes=(1,))
def added_token_of_markdown_html_and_bidi(folder: Path) -> None:
    """A special token past the embedding rows whose text is every hostile construct: the gate fails."""
    _added_token(folder, READER_HOSTILE)


@case("strings for readers", exit_codes=(1,))
def added_token_of_code_fences_and_newlines(folder: Path) -> None:
    """Backtick runs and newlines that would close a code span or open a fence in a Markdown report."""
    _added_token(folder, "`\n```\n``x``\n\n# heading\n> quote\n```")


@case("strings for readers", exit_codes=(0,))
def tensor_name_of_markdown_html_and_bidi(folder: Path) -> None:
    """An extra tensor named with every hostile construct: read, listed, and the healthy checkpoint passes."""
    header, data = embedding_header()
    header[READER_HOSTILE] = {"dtype": "F32", "shape": [1], "data_offsets": [len(data), len(data) + 4]}
    (folder / "model.safetensors").write_bytes(safetensors_bytes(header, data + bytes(4)))


@case("strings for readers", exit_codes=(0,))
def chat_template_of_markdown_html_and_bidi(folder: Path) -> None:
    """A chat template whose markers and ``raise_exception`` message are hostile (never rendered statically)."""
    template = ("{% for m in messages %}<|" + READER_HOSTILE.replace("'", "") + "|>{{ m['content'] }}{% endfor %}"
                "{{ raise_exception('" + READER_HOSTILE.replace("'", "") + "') }}")
    write_json(folder / "tokenizer_config.json", dict(TOKENIZER_CONFIG, chat_template=template))

