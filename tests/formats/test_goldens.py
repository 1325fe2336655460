"""Every format's golden report in reports/formats/ matches what the code renders today."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "reports" / "formats"


def load_script():
    spec = importlib.util.spec_from_file_location("regenerate_formats", ROOT / "scripts" / "regenerate_formats.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


@pytest.fixture(scope="module")
def rendered() -> dict[str, str]:
    return load_script().golden_outputs()


def test_every_format_has_a_golden(rendered):
    from hf_vocab_audit.formats import RENDERERS

    assert set(load_script().EXTENSIONS) == set(RENDERERS)
    assert sorted(rendered) == sorted(p.name for p in GOLDEN.iterdir())


@pytest.mark.parametrize("name", sorted(p.name for p in GOLDEN.iterdir()))
def test_golden_is_current(rendered, name):
    expected = (GOLDEN / name).read_text(encoding="utf-8")
    assert rendered[name] == expected, f"reports/formats/{name} is stale: run python scripts/regenerate_formats.py"
