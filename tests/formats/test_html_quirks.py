"""The HTML report looks the same with and without its doctype (issue 38).

A page opened from a CI artifact, pasted into another page or served without its first line renders in
quirks mode, where class selectors match without regard to case: ``.ERROR`` (the verdict badge's colour)
matched every ``<tr class="finding error">`` and painted error rows solid red. The page's CSS must not depend
on the mode: every element's computed style is the same in both.
"""

from __future__ import annotations

import json
import re
import subprocess

import pytest
from builders import checkpoint

import hf_vocab_audit as hva
from hf_vocab_audit.formats import render

from .test_html import CHROMIUM, FLAGS, needs_chromium

PROPERTIES = ("background-color", "color", "font-size", "font-weight", "font-style", "font-family", "line-height",
              "white-space", "text-align", "display", "margin-top", "border-left-color", "width")
# Appended to a copy of the page for the test only (the report itself has no scripts): the rendering mode and
# each element's computed style, written into the DOM that --dump-dom prints.
PROBE = ("<script>\nconst props = " + json.dumps(PROPERTIES) + """;
const out = {mode: document.compatMode, elements: []};
for (const el of document.querySelectorAll("main.hva, main.hva *")) {
  const cs = getComputedStyle(el);
  out.elements.push([el.tagName + "." + el.className, ...props.map(p => cs.getPropertyValue(p))]);
}
const pre = document.createElement("pre"); pre.id = "probe"; pre.textContent = JSON.stringify(out);
document.body.appendChild(pre);
</script>""")


def computed(page_text: str, tmp_path, name: str) -> dict:
    page = tmp_path / f"{name}.html"
    page.write_text(page_text.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    dom = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", page.as_uri()],
                         check=True, capture_output=True, timeout=120, text=True).stdout
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S)
    assert found, dom[-2000:]
    return json.loads(found.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">")
                      .replace("&amp;", "&"))


@pytest.fixture(scope="module")
def failing_page(tmp_path_factory) -> str:
    """A FAIL report with error, warning and info rows (tokens added without a resize, pad == eos)."""
    folder = checkpoint(tmp_path_factory.mktemp("q") / "m", "llama", rows=104, added_special=["<|im_start|>"])
    page = render(hva.audit(folder).judged("warning"), "html")
    assert page.startswith("<!DOCTYPE html>") and '<tr class="finding error"' in page
    return page


@needs_chromium
def test_the_page_renders_the_same_in_quirks_and_standards_mode(failing_page, tmp_path):
    standards = computed(failing_page, tmp_path, "standards")
    quirks = computed(failing_page.removeprefix("<!DOCTYPE html>\n"), tmp_path, "quirks")
    assert (standards["mode"], quirks["mode"]) == ("CSS1Compat", "BackCompat")
    rows = [e for e in quirks["elements"] if e[0] == "TR.finding error"]
    assert rows, "the report has error rows"
    background = PROPERTIES.index("background-color") + 1
    assert all(r[background] in ("rgba(0, 0, 0, 0)", "rgb(255, 255, 255)") for r in rows), rows  # not solid red
    badge = next(e for e in quirks["elements"] if e[0].startswith("SPAN.verdict"))
    assert badge[background] == "rgb(192, 57, 43)"  # the FAIL badge stays red
    differs = [(s, q) for s, q in zip(standards["elements"], quirks["elements"], strict=True) if s != q]
    assert not differs, differs[:5]
