"""``hf-vocab-audit repro BATCH_FILE [MODEL_DIR]``: replay a batch the guard saved, on CPU, in seconds.

The batch is checked against the checkpoint's limits (and where those differ from the live limits the
sidecar recorded, that is reported: the script changed the model after loading), then the forward runs on
CPU, by default on a shape twin (no weights loaded), to give the real Python traceback. Exit codes: 1 the
CPU forward fails (reproduced), 0 it runs clean, 2 the replay could not run.
"""

from __future__ import annotations

import inspect
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from .errors import AuditError, import_torch
from .facts.tree import check_tree
from .io.jsonfile import read_json_object

COMPARED = (("input_rows", "input-embedding rows"), ("decoder_input_rows", "decoder input-embedding rows"),
            ("output_rows", "output-projection rows"), ("num_labels", "classifier rows (num_labels)"),
            ("type_rows", "token-type rows"), ("usable_positions", "usable positions"))
GPU_ONLY = ("The CPU forward runs clean. That suggests a GPU-only cause: a varlen / flash-attention kernel "
            "trusting attention_mask sums or cu_seq_lens, a custom CUDA kernel, or a fault from an earlier "
            "batch (device-side asserts are reported late; rerun with CUDA_LAUNCH_BLOCKING=1).")


@dataclass(frozen=True)
class ReplayOutcome:
    """What a CPU forward did with a batch: the exception class and message, or None when it ran clean."""

    exc_type: str | None
    message: str | None
    traceback: str | None
    dropped: tuple[str, ...] = ()  # batch keys the forward does not take


def replay(model: Any, batch: dict[str, Any]) -> ReplayOutcome:
    """Run ``model(**batch)`` on CPU without gradients; keys the forward does not take are dropped."""
    import torch

    accepted = inspect.signature(model.forward).parameters
    takes_kwargs = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in accepted.values())
    inputs = {k: v for k, v in batch.items() if k in accepted or takes_kwargs}
    dropped = tuple(k for k in batch if k not in inputs)
    try:
        with torch.no_grad():
            model(**inputs)
    except Exception as exc:  # noqa: BLE001 - the exception is the result
        return ReplayOutcome(type(exc).__name__, str(exc), "".join(traceback.format_exception(exc)), dropped)
    return ReplayOutcome(None, None, None, dropped)


def run_repro(batch_file: Path, model_dir: Path | None, *, weights: bool, out: TextIO) -> int:
    """The ``repro`` command; returns the exit code (raises AuditError when it cannot run)."""
    import_torch(batch_file, "replaying a batch (repro)")

    from .guard.checks import check_batch
    from .guard.evidence import read_evidence
    from .guard.limits import LiveLimits, limits_of
    from .guard.twin import build_twin

    tensors, sidecar = read_evidence(batch_file)
    live = None
    if sidecar and isinstance(sidecar.get("limits"), dict):
        try:
            live = LiveLimits.from_dict(sidecar["limits"])
        except ValueError as exc:
            raise AuditError(batch_file.with_suffix(".json"), str(exc)) from None
    class_name = live.model_class if live else None
    if model_dir is not None:
        config_path = model_dir / "config.json"
        if not config_path.is_file():
            raise AuditError(config_path, "missing: MODEL_DIR must be a checkpoint folder with config.json")
        check_tree(model_dir)  # the checks `check` makes before reading a file of the folder
        config_dict = read_json_object(config_path)
    elif sidecar and isinstance(sidecar.get("config"), dict):
        config_dict = sidecar["config"]
    else:
        raise AuditError(batch_file, "no sidecar config to build the model from: pass MODEL_DIR")
    where = str(model_dir / "config.json") if model_dir else str(batch_file.with_suffix(".json"))

    if weights:
        if model_dir is None:
            raise AuditError(batch_file, "--weights needs MODEL_DIR")
        from .guard.twin import config_of, model_class

        cls: Any = model_class(class_name, config_of(config_dict, where))
        model = cls.from_pretrained(model_dir, trust_remote_code=False).eval()
        kind = f"{cls.__name__} with the weights of {model_dir}"
    else:
        rows = _rows(model_dir, live)
        model = build_twin(config_dict, class_name, where=where, **rows)
        kind = f"a shape twin of {type(model).__name__} (real row counts, tiny hidden sizes, no weights)"
    limits = limits_of(model)
    if live is not None:
        limits = LiveLimits.from_dict({**limits.to_dict(), "attn_implementation": live.attn_implementation,
                                   "ignore_index": live.ignore_index, "pad_token_id": live.pad_token_id,
                                   "pad_token": live.pad_token, "tokenizer_length": live.tokenizer_length})
    source = f"the checkpoint {model_dir}" if model_dir else "the live model (sidecar)"
    out.write(f"batch {batch_file}: {', '.join(f'{k} {tuple(v.shape)}' for k, v in tensors.items())}\n")
    if live is not None and model_dir is not None:
        for attr, what in COMPARED:
            a, b = getattr(live, attr), getattr(limits, attr)
            if a is not None and b is not None and a != b:
                out.write(f"limit differs: the live model had {a} {what}, the checkpoint has {b} (the training "
                          "script changed the model after loading: resize, new head, or other settings)\n")
    violations = check_batch(tensors, limits)
    if violations:
        out.write(f"checked against {source}: {len(violations)} problem(s)\n")
        for v in violations:
            out.write(f"  {v.code} {v.message}\n    likely cause: {v.cause}\n    fix: {v.fix}\n")
    else:
        out.write(f"checked against {source}: every key in range\n")
    positions = limits.usable_positions
    declared = config_dict.get("max_position_embeddings")
    if positions is None and isinstance(declared, int) and not isinstance(declared, bool) and declared > 0:
        positions = declared  # rotary models: no table, but the length the model was built for
    replayed, note = bounded_replay(tensors, positions)
    if note:
        out.write(note + "\n")
    out.write(f"replaying the forward on CPU with {kind}\n")
    outcome = replay(model, replayed)
    if outcome.dropped:
        out.write(f"not passed to {type(model).__name__}.forward (it does not take them): {', '.join(outcome.dropped)}\n")
    if outcome.exc_type is None:
        out.write(GPU_ONLY + "\n")
        return 0
    out.write(f"reproduced: {outcome.exc_type}: {outcome.message}\n\n{outcome.traceback}")
    return 1


MAX_REPLAY_POSITIONS = 8192  # when the model has no position limit (rotary): a forward of this is seconds


def bounded_replay(tensors: dict[str, Any], positions: int | None) -> tuple[dict[str, Any], str | None]:
    """The batch cut to ``positions + 1`` positions (one past the model's: an overflow still reproduces),
    else to MAX_REPLAY_POSITIONS, and a line saying so; a 400,000-token batch replayed for minutes.

    Every tensor whose last dimension is the sequence length (``input_ids``' or the first 2-D tensor's) is cut
    along it; the check above has already seen the whole batch."""
    cap = positions + 1 if positions is not None else MAX_REPLAY_POSITIONS
    cap = min(cap, MAX_REPLAY_POSITIONS)
    lead = tensors.get("input_ids")
    if lead is None:
        lead = next((t for t in tensors.values() if getattr(t, "ndim", 0) == 2), None)
    length = int(lead.shape[-1]) if lead is not None and lead.ndim >= 1 else 0
    if length <= cap:
        return dict(tensors), None
    cut = {k: (v[..., :cap] if v.ndim >= 1 and int(v.shape[-1]) == length else v) for k, v in tensors.items()}
    limit = f"the model's {positions} positions" if positions is not None else "the replay limit"
    return cut, (f"replaying the first {cap} of {length} positions ({limit} + 1: enough to reproduce an "
                 "overflow, not minutes of attention over the whole batch)")


def _rows(model_dir: Path | None, live: Any) -> dict[str, Any]:
    """Row counts for the twin: from the checkpoint's tensor headers when MODEL_DIR is given, else live."""
    from .facts import gather
    from .facts.positions import OFFSET_TWO_TYPES

    if model_dir is None:
        if live is None:
            return dict(input_rows=None, output_rows=None, type_rows=None, position_rows=None, position_offset=0,
                        num_labels=None)
        return dict(input_rows=live.input_rows, output_rows=live.output_rows, type_rows=live.type_rows,
                    position_rows=live.position_rows, position_offset=live.position_offset, num_labels=live.num_labels)
    facts = gather(model_dir)
    emb = facts.embeddings
    if emb is None:
        raise AuditError(model_dir, f"cannot read the tensor shapes: {facts.missing.get('tensors', 'no weights')}")
    classifier = emb.classifier.rows if emb.classifier is not None else None
    offset = 2 if (facts.config.model_type or "") in OFFSET_TWO_TYPES else 0
    return dict(input_rows=emb.input_rows, output_rows=emb.output_rows,
                type_rows=emb.token_type.rows if emb.token_type else None,
                position_rows=emb.position.rows if emb.position else None, position_offset=offset,
                num_labels=classifier)
