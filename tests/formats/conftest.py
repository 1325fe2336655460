from __future__ import annotations

from pathlib import Path

import pytest

from hf_vocab_audit.demo import build_demo_checkpoint


@pytest.fixture(scope="session")
def broken_rel(tmp_path_factory) -> Path:
    """The demo's broken checkpoint at ``models/broken`` under a root folder (returned)."""
    root = tmp_path_factory.mktemp("repo")
    build_demo_checkpoint(root / "models" / "broken")
    return root


@pytest.fixture()
def broken_report(broken_rel, monkeypatch):
    """(report of models/broken audited with a relative path from the root, root)."""
    from hf_vocab_audit import audit

    monkeypatch.chdir(broken_rel)
    return audit("models/broken")
