"""The README stays a front page (set-up, quick start, rules, links) and the docs site holds the rest.

``mkdocs build --strict`` in .ci/run checks the links and anchors between the pages of docs/; these tests
check what it cannot see: the README's own links, and that every page is on the site."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_the_readme_keeps_only_the_front_page_sections():
    sections = re.findall(r"^## (.+)$", README, flags=re.MULTILINE)
    assert sections == ["Set-up on a fresh machine", "Quick start", "Rules", "Documentation"]
    rules = README.index("<!-- rules:start")
    assert len(README[:rules].splitlines()) < 60  # the rest of the front page fits on a screen or two


def test_every_relative_link_of_the_readme_names_a_file_of_the_repository():
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README)
    relative = [link for link in links if "://" not in link]
    assert "docs/user-guide.md" in relative and "docs/ci-gate.md" in relative
    assert [link for link in relative if not (ROOT / link).exists()] == []


def _nav_pages(nav: list) -> list[str]:
    pages: list[str] = []
    for entry in nav:
        for value in entry.values():
            pages += _nav_pages(value) if isinstance(value, list) else [value]
    return pages


def test_every_docs_page_is_on_the_site_and_linked_from_the_readme():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    assert config["docs_dir"] == "docs"
    pages = _nav_pages(config["nav"])
    files = sorted(p.name for p in (ROOT / "docs").glob("*.md"))
    assert sorted(pages) == files
    assert [name for name in files if name != "index.md" and f"(docs/{name}" not in README] == []
