from __future__ import annotations

from pathlib import Path

import pytest

from .fixkit import tree_hashes


@pytest.fixture()
def guard_input():
    """Hash a folder before a test and assert it is byte-identical afterwards."""
    folders: list[tuple[Path, dict[str, str]]] = []

    def watch(folder: Path) -> Path:
        folders.append((folder, tree_hashes(folder)))
        return folder

    yield watch
    for folder, before in folders:
        assert tree_hashes(folder) == before, f"{folder} was modified"
