"""Every hostile checkpoint in ``malformed.CASES`` through the CLI, in a child process with a memory
(RLIMIT_AS) and per-case time limit: exit 2 with one line naming the file, or an audit (exit 0/1) with a
valid report; never a traceback, never code executed, never the input modified.

All cases share one child (``run_batch``: start-up paid once); ``REAL_PROCESS_CASES`` also run as
separate ``python -m hf_vocab_audit`` processes, which measures each one's own time and memory."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from fixsafety import tree_state
from malformed import (
    CASES,
    MEMORY_LIMIT,
    TEST_TIME_CAP,
    Case,
    Outcome,
    hub_env,
    run_batch,
    run_cli,
    serve_hub_cases,
)

MAX_RSS_MB = 1024  # peak resident memory of one audit; importing torch alone is ~240 MB


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory) -> dict[str, tuple[Outcome, dict[str, str], dict[str, str]]]:
    base = tmp_path_factory.mktemp("hostile")
    items, hub_items, before = [], [], {}
    for c in CASES:
        root = base / c.name
        root.mkdir()
        args = c.build(root / "ckpt")
        before[c.name] = tree_state(root)
        (hub_items if c.hub else items).append((c.name, _with_json(args)))
    results = run_batch(items, timeout=TEST_TIME_CAP)
    with serve_hub_cases() as server:  # the Hub cases: one more child, against a loopback Hub
        results.update(run_batch(hub_items, env=hub_env(server.url, base / "hf-home"), timeout=TEST_TIME_CAP))
        requests = list(server.requests)
    forbidden = [path for _, path in requests if "x.safetensors" in path]
    assert not forbidden, f"requests for shards a hostile index named: {forbidden}"
    return {c.name: (results[c.name], before[c.name], tree_state(base / c.name)) for c in CASES}


REAL_PROCESS_CASES = [
    "header_length_2_pow_63", "weights_file_is_a_fifo", "config_1gb_sparse", "config_nested_1m_deep",
    "bin_pickle_runs_code", "config_symlink_outside", "model_dir_name_with_newline", "header_100k_tensors",
]


@pytest.mark.parametrize("name", REAL_PROCESS_CASES)
def test_hostile_input_in_its_own_process(name: str, tmp_path):
    case = next(c for c in CASES if c.name == name)
    args = case.build(tmp_path / "ckpt")
    before = tree_state(tmp_path)
    outcome = run_cli(_with_json(args), cwd=tmp_path, timeout=TEST_TIME_CAP)
    _check(case, outcome, before, tree_state(tmp_path))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_input_is_refused_or_audited(case: Case, outcomes):
    _check(case, *outcomes[case.name])


def _check(case: Case, outcome: Outcome, before: dict[str, str], after: dict[str, str]) -> None:
    assert outcome.exit_code != 124, f"over the tests' {TEST_TIME_CAP:.0f}s cap"
    assert "Traceback" not in outcome.stderr
    if outcome.exit_code == 2 and outcome.stdout and set(case.exit_codes) & {0, 1}:
        # Audited, and failed closed: the report names what it could not examine (an empty header, a refused
        # pickle, an index that maps nothing), instead of passing what it never saw.
        report = json.loads(outcome.stdout, parse_constant=_not_json)
        assert report["exit_code"] == 2 and report["verdict"] == "ERROR"
        assert report["not_examined"] == len(report["coverage"]["not_examined"]) > 0, report["coverage"]
        assert all(line.startswith("hf-vocab-audit: ") for line in outcome.stderr.splitlines()), outcome.stderr
    else:
        assert outcome.exit_code in case.exit_codes, (outcome.exit_code, outcome.stderr[-2000:])
    if outcome.exit_code == 2 and not (outcome.stdout and set(case.exit_codes) & {0, 1}):
        assert outcome.stdout == "", "refused: one line on stderr, no report"
        lines = outcome.stderr.splitlines()
        assert len(lines) == 1, outcome.stderr
        assert lines[0].startswith("hf-vocab-audit: error: ")
        assert "unexpected" not in lines[0], lines[0]
        if case.names:
            assert case.names in lines[0], lines[0]
        if case.says:
            assert case.says in lines[0], lines[0]
    elif case.name.startswith("repro_"):  # repro prints its replay as text
        assert outcome.stdout.startswith("batch "), outcome.stdout[:300]
    elif outcome.exit_code != 2:
        report = json.loads(outcome.stdout, parse_constant=_not_json)  # strict: NaN/Infinity are not JSON
        assert report["exit_code"] == outcome.exit_code
        assert all(line.startswith("hf-vocab-audit: ") for line in outcome.stderr.splitlines()), outcome.stderr
    assert outcome.max_rss_mb < MAX_RSS_MB, f"{outcome.max_rss_mb:.0f} MB (address space capped at {MEMORY_LIMIT})"
    assert before == after, "the audit changed its input or wrote next to it"
    assert "PWNED" not in after and not any(k.endswith("PWNED") for k in after), "checkpoint code ran"


def _with_json(args: list[str]) -> list[str]:
    """The case's arguments with ``--format json`` (``check`` only: ``repro`` prints text)."""
    return args if args[:1] == ["repro"] else [*args, "--format", "json"]


def _not_json(constant: str) -> None:
    raise AssertionError(f"{constant} in the JSON report (not JSON; must be null)")


def test_catalogue_covers_the_issue_list():
    """The malformed inputs named in issue #6 are all in the catalogue."""
    names = {c.name for c in CASES}
    for required in (
        "header_length_2_pow_63", "header_bigger_than_file", "header_invalid_utf8", "header_invalid_json",
        "offsets_overlap", "offsets_past_end", "dtype_size_disagrees_with_offsets", "index_names_missing_shard",
        "tensor_in_two_shards", "vocab_size_a_string", "vocab_size_negative", "vocab_size_null",
        "tokenizer_json_not_a_tokenizer", "config_symlink_outside", "empty_folder", "model_dir_is_a_file",
        "config_1gb_sparse", "config_nested_1m_deep", "shape_product_10_pow_400", "bin_pickle_runs_code",
    ):
        assert required in names


def test_catalogue_has_a_group_per_class_of_issue_11():
    """Issue 11's seven classes each have their own group of cases (classes 5 and 6 share the Hub's)."""
    groups: dict[str, int] = {}
    for c in CASES:
        groups[c.group] = groups.get(c.group, 0) + 1
    for group in ("tokenizer library", "unbounded work", "links at depth", "dataset folder",
                  "writes and downloads", "hub", "report injection"):
        assert groups.get(group, 0) >= 2, group


def test_catalogue_has_a_group_per_class_of_issue_24():
    """Issue 24: the stand-ins for weights (item 3) and the five classes of the third round each have a group,
    and every stand-in case's line names the fix."""
    groups: dict[str, list[Case]] = {}
    for c in CASES:
        groups.setdefault(c.group, []).append(c)
    for group in ("stand-ins", "slow tokenizer (class 1)", "output links (class 2)", "repro evidence (class 3)",
                  "expanding datasets (class 4)", "unbounded reads (class 5)"):
        assert len(groups.get(group, [])) >= 3, group
    assert sum(c.says == "git lfs pull" for c in groups["stand-ins"]) >= 5


def test_debug_shows_the_traceback(tmp_path):
    c = next(c for c in CASES if c.name == "offsets_overlap")
    args = c.build(tmp_path / "ckpt")
    outcome = run_cli([*args, "--debug"])
    assert outcome.exit_code == 1  # an uncaught exception under --debug
    assert "Traceback" in outcome.stderr and "AuditError" in outcome.stderr


def test_closed_stdout_is_not_a_traceback(tmp_path):
    """`hf-vocab-audit check DIR | head -1`: the reader leaves early; the exit code stays the audit's."""
    import subprocess
    import sys

    from malformed import tiny_checkpoint

    folder = tiny_checkpoint(tmp_path / "ckpt")
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.Popen([sys.executable, "-m", "hf_vocab_audit", "check", str(folder), "--format", "json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(root)})
    proc.stdout.close()  # type: ignore[union-attr]
    err = proc.stderr.read().decode()  # type: ignore[union-attr]
    assert proc.wait(timeout=120) == 0  # the healthy audit's code (click alone would exit 1)
    assert "Traceback" not in err and "BrokenPipe" not in err, err
