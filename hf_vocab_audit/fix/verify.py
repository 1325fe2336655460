"""Prove a written checkpoint before it is renamed into place.

Every header is re-read and validated; every tensor of the input is compared with the output
(bitwise in the shards that were rewritten: whole tensors, or the old rows of a grown one; by offsets
and file size in shards the kernel copied whole, which are not read again); the audit runs again on the output and no
finding that was fixed may remain; and, when small enough, transformers loads it with no missing,
unexpected or mismatched keys.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from ..core.findings import AppliedFix, Finding, Severity
from ..core.fixes import Compared
from ..errors import AuditError, import_torch, torch_extra
from ..facts import Facts, gather
from ..facts.vocab_geometry import as_rows, vocab_axis, vocab_dim
from ..facts.weight_formats.registry import format_of
from ..io.dtypes import FLOAT_DTYPES, to_float32
from ..io.file_compare import same_bytes
from ..io.rows import map_rows
from ..io.safetensors_header import DTYPE_BITS, TensorInfo
from .reinit import mean_row_bytes
from .repair_plan import CheckpointRepair

AUTO_LOAD_LIMIT = 512 * 1024 * 1024  # bytes of weights under which --verify-load auto loads the model


class VerificationError(AuditError):
    """The written checkpoint failed a check: it is discarded, the target is left untouched."""


def _fail(output: Path, problem: str) -> NoReturn:
    raise VerificationError(output, f"verification failed, nothing written: {problem}")


def _finite(path: Path, t: TensorInfo, start: int) -> bool:
    shape = as_rows(t)
    mm = map_rows(path, t, *shape)
    ok = bool(np.isfinite(to_float32(np.asarray(mm[start:]), t.dtype)).all())
    del mm
    return ok


def rewritten_shards(src: Facts, plan: CheckpointRepair) -> set[str]:
    """The weight files the surgical writer rewrites; every other file it copies whole, by the kernel."""
    tensors = src.tensors.tensors if src.tensors else {}
    return {tensors[name].file for name in [*plan.grow, *plan.reinit] if name in tensors}


def compare_safetensors(src: Facts, out: Facts, plan: CheckpointRepair, output: Path) -> Compared:
    """Every input tensor checked in the output: bitwise (old rows only, for grown tensors) in the shards
    that were rewritten; in a shard copied whole (a reflink or the kernel's copy: no byte passed through
    this process), the same header offsets and the same file size."""
    before, after = src.required_tensors().tensors, out.required_tensors().tensors
    rewritten = rewritten_shards(src, plan)
    compared = nbytes = whole = 0
    sizes: dict[str, bool] = {}
    jobs: list[tuple[str, Path, int, Path, int, int]] = []  # the byte ranges to compare, after the cheap checks
    for name, t in before.items():
        o = after.get(name)
        if o is None:
            _fail(output, f"tensor {name} is missing from the output")
        if o.dtype != t.dtype:
            _fail(output, f"tensor {name} changed dtype {t.dtype} -> {o.dtype}")
        expect = list(t.shape)
        if name in plan.grow:
            expect[vocab_axis(t)] = plan.grow[name]
        if list(o.shape) != expect:
            _fail(output, f"tensor {name} has shape {list(o.shape)}, expected {expect}")
        (t_begin, t_end), (o_begin, _) = t.span, o.span
        length = t_end - t_begin
        if t.file not in rewritten:
            if t.file not in sizes:
                sizes[t.file] = (src.model_dir / t.file).stat().st_size == (output / o.file).stat().st_size
            if not sizes[t.file] or o.file != t.file or (o.begin, o.end) != (t.begin, t.end):
                _fail(output, f"tensor {name}: {t.file} was not copied whole")
            compared += 1
            whole += length
            continue
        ranges = [(0, length)]
        if name in plan.reinit:
            from .reinit import row_ranges

            ranges = row_ranges(t, plan.reinit[name])
            check_reinit_rows(src.model_dir / t.file, t, output / o.file, o, plan, output)
        jobs += [(name, src.model_dir / t.file, t_begin + start, output / o.file, o_begin + start, size)
                 for start, size in ranges]
        if name in plan.base_rows:  # the rows given back: the base's bytes, bit for bit
            from .surgical import base_row_range

            base_path, base_offset, size = base_row_range(plan, t)
            jobs.append((f"{name} (the rows copied from the base)", base_path, base_offset, output / o.file,
                         o_begin + length, size))
            nbytes += size
        elif name in plan.grow and not _finite(output / o.file, o, vocab_dim(t)):
            _fail(output, f"tensor {name}: the new rows are not finite")
        compared += 1
        nbytes += length
    extra = sorted(set(after) - set(before))
    if extra:
        _fail(output, f"the output has tensors the input lacks: {extra[:5]}")
    with ThreadPoolExecutor(max_workers=2) as pool:  # numpy compares with the GIL released: two cores at once
        same = list(pool.map(lambda job: same_bytes(*job[1:]), jobs))
    for job, ok in zip(jobs, same):
        if not ok:
            _fail(output, f"tensor {job[0]}: bytes of the input differ in the output")
    return Compared(bytes_compared=nbytes, tensors_compared=compared, bytes_copied_whole=whole)


def compare_files(src: Facts, output: Path) -> Compared:
    """Weights that were only copied (.bin with no growth): compared byte for byte."""
    files = src.required_tensors().files
    n = 0
    for file in files:
        a, b = src.model_dir / file, output / file
        size = a.stat().st_size
        if b.stat().st_size != size or not same_bytes(a, 0, b, 0, size):
            _fail(output, f"{file} differs from the input")
        n += size
    return Compared(bytes_compared=n, files_compared=len(files))


def compare_state_dicts(src: Facts, output: Path, plan: CheckpointRepair) -> Compared:
    """For the transformers route: old rows and every other parameter equal, through torch."""
    torch = import_torch(output, "verifying the transformers repair route")

    from .transformers_route import load_model

    before = _state_dict(src)
    model = load_model(output, src, dtype="auto")
    after = {k: v.detach() for k, v in model.state_dict().items()}
    compared = 0
    for name, t in before.items():
        o = after.get(name)
        if o is None:
            _fail(output, f"tensor {name} is not in the model loaded from the output")
        if o.dtype != t.dtype:
            _fail(output, f"tensor {name} changed dtype {t.dtype} -> {o.dtype}")
        if o.shape != t.shape:
            axes = [i for i in range(t.dim()) if o.dim() == t.dim() and o.shape[i] != t.shape[i]]
            if len(axes) != 1 or o.shape[axes[0]] < t.shape[axes[0]]:
                _fail(output, f"tensor {name} has shape {list(o.shape)}, input {list(t.shape)}")
            o = o.narrow(axes[0], 0, t.shape[axes[0]])
        if not torch.equal(o, t):
            _fail(output, f"tensor {name}: values of the input differ in the output")
        compared += 1
    return Compared(bytes_compared=sum(t.numel() * t.element_size() for t in before.values()),
                    tensors_compared=compared)


def _state_dict(facts: Facts) -> dict[str, Any]:
    import torch

    tensors = facts.required_tensors()
    out: dict[str, Any] = {}
    for file in tensors.files:
        path = facts.model_dir / file
        if format_of(tensors).byte_ranges:
            from safetensors.torch import load_file

            out.update(load_file(str(path)))
        else:
            state = torch.load(path, map_location="cpu", mmap=True, weights_only=True)
            if isinstance(state, dict) and isinstance(state.get("state_dict"), dict):
                state = state["state_dict"]
            out.update({k: v for k, v in state.items() if isinstance(v, torch.Tensor)})
    return out


def _key(f: Finding) -> tuple[Any, ...]:
    return (f.code, f.location.file, f.location.key, f.location.tensor)


def check_fixed(before: Iterable[Finding], after: Iterable[Finding], applied: Iterable[AppliedFix],
                output: Path) -> None:
    """No finding whose fix was applied may remain in the output's audit, and no new error may appear."""
    before = list(before)
    codes = {a.code for a in applied}
    remaining = {_key(f): f for f in after}
    for f in before:
        if f.code in codes and f.fix is not None and _key(f) in remaining:
            _fail(output, f"{f.code} still fires after the fix: {remaining[_key(f)].message}")
    known = {_key(f) for f in before}
    for key, f in remaining.items():
        if key not in known and f.severity is Severity.ERROR:
            _fail(output, f"the fix introduced {f.code}: {f.message}")


def check_suppressed(plan: CheckpointRepair, output: Path) -> None:
    """generation_config.json's ``suppress_tokens`` in the output holds every id the plan suppresses
    (HVA950 still fires on the output: an engine that ignores generation_config can still sample them)."""
    wanted = set(plan.suppress)
    if not wanted:
        return
    try:
        data = json.loads((output / "generation_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        _fail(output, f"generation_config.json cannot be read back ({exc})")
    have = data.get("suppress_tokens") if isinstance(data, dict) else None
    missing = sorted(wanted - set(have if isinstance(have, list) else ()))
    if missing:
        _fail(output, f"generation_config.json suppress_tokens lacks {missing[:5]}")


def _has_torch() -> bool:
    """Whether torch imports (``--verify-load auto`` skips the load without it; ``always`` asks for it)."""
    import importlib.util

    try:
        return importlib.util.find_spec("torch") is not None
    except ValueError:  # torch in sys.modules without a spec
        return True


def load_check(output: Path, out_facts: Facts, mode: str) -> str:
    """Load the output with transformers when asked (or small enough); return what happened."""
    tensors = out_facts.tensors
    size = sum(math.prod(t.shape) * DTYPE_BITS.get(t.dtype, 8) // 8 for t in tensors.tensors.values()) if tensors else 0
    if mode == "never":
        return "skipped: --verify-load never"
    if mode == "auto" and size > AUTO_LOAD_LIMIT:
        return f"skipped: {size / 2**20:.0f} MiB of weights is over the {AUTO_LOAD_LIMIT >> 20} MiB auto limit " \
               "(pass --verify-load always)"
    if mode == "auto" and not _has_torch():
        return f"skipped: PyTorch is not installed ({torch_extra()} to load the output with transformers)"
    import time

    from .transformers_route import load_model

    start = time.perf_counter()
    model, info = load_model(output, out_facts, dtype="auto", output_loading_info=True)
    problems = {k: list(v) for k, v in info.items() if k in ("missing_keys", "unexpected_keys", "mismatched_keys") and v}
    if problems:
        _fail(output, f"transformers loads it with {problems}"[:400])
    del model
    # The load is the slow part of a small fix (seconds, mostly importing torch and transformers): say what
    # it cost and how to skip it, so the time is not a mystery.
    return (f"ok: transformers loads it with no missing, unexpected or mismatched keys "
            f"({time.perf_counter() - start:.1f} s; --verify-load never skips it)")


def reread(output: Path, tokenizer: Path | None, unchanged_tokenizer: Any = None) -> Facts:
    """Every header and JSON file of the output, validated again (``unchanged_tokenizer``: the input's
    tokenizer facts, reused when the fix left the tokenizer files byte-identical)."""
    try:
        return gather(output, tokenizer, tokenizer_facts=unchanged_tokenizer)
    except AuditError as exc:
        raise VerificationError(output, f"verification failed, nothing written: {exc.problem}") from None


def check_reinit_rows(src: Path, t: TensorInfo, out: Path, o: TensorInfo, plan: CheckpointRepair, output: Path) -> None:
    """Every re-initialised row of the output holds the finite mean of the input's trained rows."""
    row = mean_row_bytes(src, t, plan)
    if not np.isfinite(to_float32(np.frombuffer(row, FLOAT_DTYPES[t.dtype]), t.dtype)).all():
        _fail(output, f"tensor {t.name}: the mean of the trained rows is not finite")
    rows, width = as_rows(o)
    mm = map_rows(out, o, rows, width)
    ids = list(plan.reinit[t.name])
    got = np.asarray(mm[ids])
    del mm
    expect = np.frombuffer(row, FLOAT_DTYPES[t.dtype])
    if not (got.view(np.uint8).reshape(len(ids), -1) == expect.view(np.uint8)).all():
        _fail(output, f"tensor {t.name}: re-initialised rows do not hold the mean of the trained rows")
