"""Promise: a stable gate. The same input gives the same findings, order, messages and exit code whatever
the hash seed, locale, dict (key) order in the files, or thread timing."""

from __future__ import annotations

import json
import os
import random
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from malformed import CASES, CONFIG, TOKENIZER_CONFIG, VOCAB, run_cli, safetensors_bytes, tiny_checkpoint, write_json

from hf_vocab_audit import audit

ENVIRONMENTS = [
    {"PYTHONHASHSEED": "0", "LC_ALL": "C"},
    {"PYTHONHASHSEED": "1", "LC_ALL": "C.UTF-8"},
    {"PYTHONHASHSEED": "4242", "LC_ALL": "POSIX"},
    {"PYTHONHASHSEED": "random", "LANG": "", "LC_ALL": ""},
]


def broken_checkpoint(folder: Path, rows: int = 6, pad: int = 2, eos: int = 2, order: random.Random | None = None):
    """Several findings at once: too few embedding rows, pad == eos, config ids past the rows, auto_map,
    a chat template naming tokens the vocabulary lacks. ``order`` shuffles every JSON object's keys."""

    def shuffled(obj):
        if order is None:
            return obj
        if isinstance(obj, dict):
            keys = list(obj)
            order.shuffle(keys)
            return {k: shuffled(obj[k]) for k in keys}
        if isinstance(obj, list):
            return [shuffled(v) for v in obj]
        return obj

    tiny_checkpoint(folder)
    write_json(folder / "config.json", shuffled(CONFIG | {"vocab_size": rows, "pad_token_id": pad, "eos_token_id": eos,
                                                          "auto_map": {"AutoModel": "m.M", "AutoConfig": "m.C"}}))
    write_json(folder / "tokenizer_config.json", shuffled(TOKENIZER_CONFIG | {
        "pad_token": VOCAB[pad], "eos_token": VOCAB[eos], "extra_special_tokens": ["<x1>", "<x2>", "<x3>"],
        "chat_template": "<|im_start|>{{ m }}<|im_end|><|eot_id|>"}))
    size = rows * 4 * 4
    header = {"model.embed_tokens.weight": {"dtype": "F32", "shape": [rows, 4], "data_offsets": [0, size]},
              "lm_head.weight": {"dtype": "F32", "shape": [rows, 4], "data_offsets": [size, 2 * size]},
              "__metadata__": {"format": "pt", "b": "1", "a": "2"}}
    (folder / "model.safetensors").write_bytes(safetensors_bytes(shuffled(header), bytes(2 * size)))
    return folder


def _comparable(stdout: str) -> dict:
    report = json.loads(stdout)
    report.pop("duration_s")
    return report


def _env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LC_") and k not in ("LANG", "PYTHONHASHSEED")}
    env.update(extra)
    return env


def test_same_report_across_hash_seeds_and_locales(tmp_path):
    folder = broken_checkpoint(tmp_path / "ckpt")
    runs = [run_cli([str(folder), "--format", "json"], env=_env(e)) for e in ENVIRONMENTS]
    first = _comparable(runs[0].stdout)
    assert len(first["findings"]) >= 4 and runs[0].exit_code == 1
    for run in runs[1:]:
        assert run.exit_code == runs[0].exit_code
        assert _comparable(run.stdout) == first
    texts = [run_cli([str(folder)], env=_env(e)).stdout for e in ENVIRONMENTS[:2]]
    assert texts[0] == texts[1] and "<|im_start|>" in texts[0]


@pytest.mark.parametrize("name", ["index_many_bad_shard_names", "tensor_in_two_shards", "offsets_overlap"])
def test_same_error_line_across_hash_seeds(tmp_path, name):
    args = next(c for c in CASES if c.name == name).build(tmp_path / "ckpt")
    runs = [run_cli(args, env=_env(e)) for e in ENVIRONMENTS[:3]]
    assert {r.exit_code for r in runs} == {2}
    assert len({r.stderr for r in runs}) == 1, [r.stderr for r in runs]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(rows=st.integers(3, 10), pad=st.integers(0, 7), eos=st.integers(0, 7), seed=st.integers(0, 2**32))
def test_key_order_in_every_file_does_not_change_the_findings(tmp_path_factory, rows, pad, eos, seed):
    base = tmp_path_factory.mktemp("order")
    plain = audit(broken_checkpoint(base / "a", rows, pad, eos))
    mixed = audit(broken_checkpoint(base / "b", rows, pad, eos, order=random.Random(seed)))
    # The same findings (a location's line follows its key, so it moves with the key order: not compared).
    assert mixed.findings == plain.findings and [f.message for f in mixed.findings] == [f.message for f in plain.findings]
    assert [f.details for f in mixed.findings] == [f.details for f in plain.findings]
    assert mixed.exit_code() == plain.exit_code()
    assert [s.to_dict() for s in mixed.skipped] == [s.to_dict() for s in plain.skipped]


def test_concurrent_audits_agree(tmp_path):
    folder = broken_checkpoint(tmp_path / "ckpt")
    expected = [f.to_dict() for f in audit(folder).findings]
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda _: [f.to_dict() for f in audit(folder).findings], range(8)))
    assert all(r == expected for r in results)


