"""Hostile catalogue, group "settings in the target": a checkpoint that brings settings to relax its own gate.

The gate judges the target, and CI audits pull requests: an ``hf-vocab-audit.toml`` (or a ``pyproject.toml``)
inside the checkpoint may only make the gate stricter. Each case is a checkpoint the gate must FAIL (exit 1)
whose own file asks for a pass (``exit-zero``, ``fail-on = "never"``, an allowlist, a selection that leaves
the finding out), for less to be read (``max-rows``, ``split``, ``chat-format`` with ``allow-partial``), or for
work on the runner (``batch-size`` of 10⁹ made the tokenizers library abort the process with nothing on
stderr; ``engine = "ray"`` started a Ray cluster). None of it is obeyed; HVA003 names the keys.
"""

from __future__ import annotations

from pathlib import Path

from malformed import CONFIG, case, tokenizer_json, write_json

GROUP = "settings in the target"


def _broken(folder: Path, settings: str, name: str = "hf-vocab-audit.toml") -> None:
    """Two tokens past the 8 embedding rows (HVA101, HVA102: the gate fails), and the target's own settings."""
    data = tokenizer_json()
    data["added_tokens"] += [{"id": 8 + i, "content": f"<new{i}>", "single_word": False, "lstrip": False,
                              "rstrip": False, "normalized": False, "special": True} for i in range(2)]
    write_json(folder / "tokenizer.json", data)
    (folder / name).write_text(settings, encoding="utf-8")


def _rows(folder: Path) -> Path:
    """A dataset folder beside the checkpoint: ``train`` holds an id past the 8 rows in its second row only,
    ``test`` is clean; so reading one row, or only ``test``, would pass what the whole dataset fails."""
    data = folder.parent / "data"
    data.mkdir(exist_ok=True)
    (data / "train.jsonl").write_text('{"input_ids": [1, 4, 5]}\n{"input_ids": [1, 4, 99]}\n', encoding="utf-8")
    (data / "test.jsonl").write_text('{"input_ids": [1, 4, 5]}\n', encoding="utf-8")
    return data


@case(GROUP, exit_codes=(1,))
def target_settings_exit_zero(folder: Path) -> None:
    _broken(folder, "exit-zero = true\n")


@case(GROUP, exit_codes=(1,))
def target_settings_fail_on_never(folder: Path) -> None:
    _broken(folder, 'fail-on = "never"\n')


@case(GROUP, exit_codes=(1,))
def target_settings_allow_the_finding(folder: Path) -> None:
    _broken(folder, "".join(f'[[allow]]\ncode = "{c}"\nreason = "fine, trust me"\n\n'
                            for c in ("HVA101", "HVA102", "HVA201")))


@case(GROUP, exit_codes=(1,))
def target_settings_select_one_irrelevant_rule(folder: Path) -> None:
    _broken(folder, 'select = ["HVA002"]\n')


@case(GROUP, exit_codes=(1,))
def target_settings_ignore_the_family(folder: Path) -> None:
    _broken(folder, 'ignore = ["HVA1", "HVA2"]\n')


@case(GROUP, exit_codes=(1,))
def target_settings_max_rows_1(folder: Path) -> list[str]:
    """A healthy checkpoint whose dataset fails on its second row only: one row read would pass."""
    (folder / "hf-vocab-audit.toml").write_text("max-rows = 1\n", encoding="utf-8")
    return [str(folder), "--dataset", str(_rows(folder) / "train.jsonl")]


@case(GROUP, exit_codes=(1,))
def target_settings_split_the_clean_one(folder: Path) -> list[str]:
    (folder / "hf-vocab-audit.toml").write_text('split = ["test"]\n', encoding="utf-8")
    return [str(folder), "--dataset", str(_rows(folder))]


@case(GROUP, exit_codes=(1,))
def target_settings_chat_format_off_allow_partial(folder: Path) -> list[str]:
    _broken(folder, 'chat-format = "off"\nallow-partial = true\n')
    return [str(folder), "--dataset", str(_rows(folder) / "test.jsonl")]


@case(GROUP, exit_codes=(1,))
def target_settings_batch_size_1e9(folder: Path) -> list[str]:
    """Obeyed, the tokenizers library was handed a billion-row batch and aborted the process (SIGABRT)."""
    _broken(folder, "batch-size = 1000000000\n")
    return [str(folder), "--dataset", str(_rows(folder) / "test.jsonl")]


@case(GROUP, exit_codes=(1,))
def target_settings_engine_ray(folder: Path) -> list[str]:
    """Obeyed, a Ray cluster started on the runner (under this catalogue's 3 GiB cap it cannot even start)."""
    _broken(folder, 'engine = "ray"\nray-address = "ray://10.0.0.1:10001"\nnum-proc = 64\n')
    return [str(folder), "--dataset", str(_rows(folder) / "test.jsonl")]


@case(GROUP, exit_codes=(1,))
def target_settings_paths_and_writes(folder: Path) -> None:
    _broken(folder, 'output-file = ["../../escaped.json"]\nformat = ["text"]\nfix = true\nforce = true\n'
                    'extend-safe-fixes = ["ALL"]\nunknown-key = 1\n"\\u001b]0;x\\u0007::error::k" = 1\n')


@case(GROUP, exit_codes=(1,))
def target_settings_in_its_pyproject(folder: Path) -> None:
    """A pyproject.toml in the target is the target's, never the operator's (read when the gate runs inside it)."""
    _broken(folder, '[tool.hf-vocab-audit]\nexit-zero = true\nfail-on = "never"\n', name="pyproject.toml")


@case(GROUP, exit_codes=(1,))
def target_settings_stricter_fail_on_is_obeyed(folder: Path) -> None:
    """The one thing a target's file may do: fail on less. A checkpoint with only a warning (HVA202) fails."""
    write_json(folder / "config.json", {**CONFIG, "eos_token_id": 4})  # the tokenizer's eos is </s> (2): HVA202
    (folder / "hf-vocab-audit.toml").write_text('fail-on = "warning"\n', encoding="utf-8")


@case(GROUP, exit_codes=(1,), hub=True)
def target_settings_from_the_hub(folder: Path) -> None:
    """A Hub repo's own hf-vocab-audit.toml is the target's too."""
    _broken(folder, 'exit-zero = true\nfail-on = "never"\nignore = ["ALL"]\n')
