"""mkdocs hooks (mkdocs.yml ``hooks:``): the pages read the same on the site as on GitHub.

GitHub's tables split a row at every unescaped ``|``, code spans included, so the generated tables write a
pipe inside code as ``\\|``; Python-Markdown's tables already keep a code span whole and would show the
backslash. On the site, ``\\|`` inside a code span of a table row is written back as ``|``.
"""

from __future__ import annotations

import re
from typing import Any

CODE_SPAN = re.compile(r"`[^`\n]*`")


def on_page_markdown(markdown: str, **_: Any) -> str:
    lines = markdown.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("|") and "\\|" in line:
            lines[i] = CODE_SPAN.sub(lambda span: span.group(0).replace("\\|", "|"), line)
    return "\n".join(lines)
