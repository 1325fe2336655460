"""The command line: exit codes, one-line errors, rules/explain/demo."""

from __future__ import annotations

import json
import struct
import subprocess
import sys

import pytest
from builders import CHATML, checkpoint, edit_json


def test_check_clean_exits_0(tmp_path, run_cli):
    code, out, _ = run_cli("check", checkpoint(tmp_path, "llama", 104))
    assert code == 0 and "PASS 0 error(s)" in out


def test_check_broken_exits_1_and_json_matches(tmp_path, run_cli):
    checkpoint(tmp_path, "llama", 104, added_special=["<|im_start|>", "<|im_end|>"], chat_template=CHATML)
    code, out, _ = run_cli("check", tmp_path, "--format", "json")
    assert code == 1
    data = json.loads(out)
    assert data["exit_code"] == 1 and data["summary"]["error"] >= 2
    assert {f["code"] for f in data["findings"]} >= {"HVA101", "HVA102", "HVA206"}


def test_fail_on_and_select_ignore(tmp_path, run_cli):
    checkpoint(tmp_path, "llama", 104, added_special=["<|im_start|>", "<|im_end|>"], chat_template=CHATML)
    assert run_cli("check", tmp_path, "--fail-on", "never")[0] == 0
    assert run_cli("check", tmp_path, "--ignore", "HVA1", "--ignore", "HVA206")[0] == 0
    code, out, _ = run_cli("check", tmp_path, "--select", "HVA101", "--format", "json")
    assert code == 1 and {f["code"] for f in json.loads(out)["findings"]} == {"HVA101"}


def test_unknown_selector_exits_2(tmp_path, run_cli):
    code, _, err = run_cli("check", checkpoint(tmp_path, "llama", 104), "--select", "HVA999")
    assert code == 2 and "unknown rule code or name: HVA999" in err


def test_output_file(tmp_path, run_cli):
    out_file = tmp_path / "r.json"
    code, out, _ = run_cli("check", checkpoint(tmp_path / "m", "llama", 104), "--format", "json",
                           "--output-file", out_file)
    assert code == 0 and out == "" and json.loads(out_file.read_text())["summary"]["error"] == 0


def _truncated_header(d):
    (d / "model.safetensors").write_bytes(struct.pack("<Q", 500) + b'{"a":')


def _header_larger_than_file(d):
    (d / "model.safetensors").write_bytes(struct.pack("<Q", 10**9) + b"{}")


MALFORMED = {
    "missing config": (lambda d: (d / "config.json").unlink(), "config.json: missing"),
    "corrupt config": (lambda d: (d / "config.json").write_text("{not json"), "config.json: is not valid JSON"),
    "vocab_size string": (lambda d: edit_json(d / "config.json", vocab_size="32000"),
                          "config.json: \"vocab_size\" must be an integer, not str '32000'"),
    "truncated header": (_truncated_header, "model.safetensors: safetensors header length 500 is larger"),
    "header larger than file": (_header_larger_than_file, "safetensors header length 1000000000 is larger than"),
    "tokenizer not a tokenizer": (lambda d: (d / "tokenizer.json").write_text('{"hello": 1}'),
                                  "tokenizer.json: is not a tokenizer the tokenizers library can load"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_input_exits_2_with_one_line(tmp_path, run_cli, case):
    break_it, expected = MALFORMED[case]
    checkpoint(tmp_path, "llama", 104)
    break_it(tmp_path)
    code, out, err = run_cli("check", tmp_path)
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hf-vocab-audit: error: ")
    assert expected in lines[0]
    assert "Traceback" not in err


def test_missing_folder_and_file_instead_of_folder(tmp_path, run_cli):
    code, _, err = run_cli("check", tmp_path / "nope")
    assert code == 2 and "model folder does not exist" in err
    (tmp_path / "file").write_text("x")
    code, _, err = run_cli("check", tmp_path / "file")
    assert code == 2 and "must be a folder, not a file" in err


@pytest.mark.parametrize(("args", "says"), [
    (["check", "--weigths", "x"], "No such option: --weigths (Possible options: --weights)"),
    (["check"], "Missing argument 'TARGET'"),
    (["check", "x", "--format", "yaml"], "Invalid value for '--format'"),
    (["explain"], "Missing argument 'CODE'"),
])
def test_usage_errors_are_one_line_and_exit_2(args, says):
    """A mistyped flag is an error like any other: one line naming it and the help to read, exit 2, no box."""
    result = subprocess.run([sys.executable, "-m", "hf_vocab_audit", *args], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("hf-vocab-audit: error: ") and says in lines[0], result.stderr
    assert f"{args[0]} --help" in lines[0]


@pytest.mark.parametrize(("command", "usage"), [
    ("check", "hf-vocab-audit check [OPTIONS] TARGET"),
    ("explain", "hf-vocab-audit explain [OPTIONS] CODE"),
    ("repro", "hf-vocab-audit repro [OPTIONS] BATCH_FILE [MODEL_DIR]"),
])
def test_usage_lines_name_the_arguments_as_the_help_does(command, usage):
    """The usage line reads ``check [OPTIONS] TARGET``, as the help and the docs name it, never ``{TARGET}``."""
    from typer.testing import CliRunner

    from hf_vocab_audit.cli import app

    result = CliRunner().invoke(app, [command, "--help"], terminal_width=200)
    assert result.exit_code == 0
    assert f"Usage: {usage} " in result.output and "{" not in result.output.split("Usage:", 1)[1].splitlines()[0]


def test_rules_and_explain(run_cli):
    code, out, _ = run_cli("rules")
    assert code == 0 and "HVA101  token-id-beyond-embedding" in out
    data = json.loads(run_cli("rules", "--format", "json")[1])
    assert all(r["code"].startswith("HVA") and r["severity"] in ("error", "warning", "info") for r in data)
    code, out, _ = run_cli("explain", "HVA105")
    assert code == 0 and "Why it matters:" in out and "How to fix:" in out and "padding" in out
    assert run_cli("explain", "padded-embedding-rows")[1] == out
    assert run_cli("explain", "HVA999")[0] == 2


def test_demo_runs_offline_and_shows_the_finding():
    result = subprocess.run([sys.executable, "-m", "hf_vocab_audit", "demo"], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert "HVA101 token-id-beyond-embedding" in result.stdout
    assert "resize_token_embeddings" in result.stdout
    assert "torch" not in result.stderr
    # Every command it suggests works when typed: none names the temporary folder it has deleted.
    folder = result.stdout.split("$ hf-vocab-audit check ", 1)[1].split()[0]
    advice = result.stdout.split("What to do next:", 1)[1]
    assert folder not in advice and "check DIR --fix" in advice and "demo --keep DIR" in advice


def test_demo_keep_names_the_kept_folder_in_its_advice(tmp_path):
    kept = tmp_path / "demo"
    result = subprocess.run([sys.executable, "-m", "hf_vocab_audit", "demo", "--keep", str(kept)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert f"check {kept} --fix" in result.stdout and "demo --keep DIR" not in result.stdout
    assert (kept / "config.json").is_file()


def test_check_reads_the_tokenizer_before_importing_the_report_and_the_rules(tmp_path):
    """The tokenizer's ids are proved on other threads while the report model and the rule modules are
    imported: if those imports came first, the gate would wait for the proof (static gate cost, issue 28)."""
    checkpoint(tmp_path, "llama", 104)
    code = (
        "import sys\n"
        "import hf_vocab_audit.facts.sources.folder as fo\n"
        "seen = []\n"
        "load = fo.load_tokenizer\n"
        "def spy(*a, **k):\n"
        "    seen.extend(m for m in sys.modules if m.startswith(('hf_vocab_audit.core.report', "
        "'hf_vocab_audit.rules')))\n"
        "    return load(*a, **k)\n"
        "fo.load_tokenizer = spy\n"
        "sys.argv = ['x', 'check', sys.argv[1]]\n"
        "from hf_vocab_audit.cli import main\n"
        "try:\n    main()\n"
        "except SystemExit as e:\n    assert e.code == 0, e.code\n"
        "assert not seen, seen\n"
        "print('checked')\n"
    )
    result = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.rstrip().endswith("checked")


def test_static_check_does_not_import_torch_or_transformers(tmp_path):
    checkpoint(tmp_path, "llama", 104)
    code = (
        "import sys; from hf_vocab_audit.cli import main; sys.argv=['x','check',sys.argv[1]]\n"
        "try:\n    main()\nexcept SystemExit as e:\n    assert e.code == 0, e.code\n"
        "bad = [m for m in ('torch', 'transformers') if m in sys.modules]\nassert not bad, bad\n"
    )
    result = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]


def test_help_into_a_closed_pipe_ends_without_a_traceback():
    """`hf-vocab-audit check --help | head -2`: the reader goes away mid-help; the command ends quietly (typer 0.28
    moved `Abort` out of its vendored click, and naming the old place raised while handling the broken pipe)."""
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "hf_vocab_audit", "check", "--help"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.read(64)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.wait(timeout=60)
    assert "Traceback" not in err and proc.returncode in (0, 1)
