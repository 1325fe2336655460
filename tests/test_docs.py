"""The README stays a front page (set-up, quick start, the pairs of artifacts, rules, links) and the docs site holds the rest.

``mkdocs build --strict`` in .ci/run checks the links and anchors between the pages of docs/; these tests
check what it cannot see: the README's own links, and that every page is on the site."""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_the_readme_keeps_only_the_front_page_sections():
    sections = re.findall(r"^## (.+)$", README, flags=re.MULTILINE)
    assert sections == ["Set-up on a fresh machine", "Quick start", "Between artifacts", "Rules", "Documentation"]
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


def _between_artifacts_commands() -> list[list[str]]:
    section = README[README.index("## Between artifacts"):README.index("## Rules")]
    lines = [line.strip() for line in section.splitlines() if line.startswith("    hf-vocab-audit ")]
    return [shlex.split(line.split("  #")[0]) for line in lines]


def test_the_between_artifacts_commands_run_as_written(tmp_path):
    """Each README example of a pair runs as printed (flags spelt as the CLI takes them) on the folders it names,
    built here: it audits (exit 0 or 1), never stops at the command line or an unreadable input (exit 2)."""
    import subprocess
    import sys

    import torch
    from builders import checkpoint, make_tokenizer
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    chatml = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
              "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    make_tokenizer(tmp_path / "base", 100, chat_template=chatml, added_special=["<|im_start|>", "<|im_end|>"])
    torch.manual_seed(0)
    LlamaForCausalLM(LlamaConfig(vocab_size=128, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                 num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=128,
                                 bos_token_id=1, eos_token_id=2)).save_pretrained(tmp_path / "base")
    tok = AutoTokenizer.from_pretrained(tmp_path / "base")
    model = LlamaForCausalLM.from_pretrained(tmp_path / "base")
    model.resize_token_embeddings(len(tok))  # cuts the base's padding rows: HVA846, which --fix regrows
    model.save_pretrained(tmp_path / "finetune")
    tok.save_pretrained(tmp_path / "finetune")
    checkpoint(tmp_path / "target")
    checkpoint(tmp_path / "draft")
    checkpoint(tmp_path / "model", chat_template=chatml, added_special=["<|im_start|>", "<|im_end|>", "<think>"])
    commands = _between_artifacts_commands()
    assert len(commands) >= 9 and {"--base", "--draft", "--target", "--fix", "--tp"} <= {a for c in commands for a in c}
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    for argv in commands:
        assert argv[0] == "hf-vocab-audit"
        done = subprocess.run([sys.executable, "-m", "hf_vocab_audit", *argv[1:]], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode in (0, 1), (argv, done.stdout[-2000:], done.stderr[-2000:])
    assert (tmp_path / "finetune-fixed" / "config.json").is_file()
