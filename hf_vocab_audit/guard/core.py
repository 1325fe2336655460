"""The ``Guard``: limits from the live model, checks on every batch, a precise error before the GPU sees it."""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from .checks import BatchViolation, check_batch
from .errors import MARKER, BatchIndexError, PreflightError
from .evidence import KEEP_RUNS, default_dir, new_run_id, write_evidence
from .limits import LiveLimits, limits_of

DEFER_KEY = "hf_vocab_audit_guard_error"  # a bad batch's error, carried to the forward pre-hook


def current_rank() -> int:
    """This process's rank: torch.distributed when initialised, else the launcher's RANK, else 0."""
    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        return int(dist.get_rank())
    try:
        return int(os.environ.get("RANK", "0"))
    except ValueError:
        return 0


def _worker() -> tuple[int | None, int]:
    """(DataLoader worker id or None in the main process, number of workers)."""
    data = sys.modules.get("torch.utils.data")
    info = data.get_worker_info() if data is not None else None
    return (None, 1) if info is None else (int(info.id), int(info.num_workers))


def _config_dict(model: Any) -> dict[str, Any] | None:
    config = getattr(model, "config", None)
    to_json = getattr(config, "to_json_string", None)
    if not callable(to_json):
        return None
    try:
        data = json.loads(to_json(use_diff=False))
    except (TypeError, ValueError):
        return None
    return data if isinstance(data, dict) else None


@dataclass(frozen=True)
class DeferredVerdict:
    """A bad batch's verdict, carried in the batch from the collator to the forward (``guard_trainer``).

    The evidence is written when the batch reaches the model, not when it is collated: the loader
    prefetches, and a batch collated after the failing one never runs and must leave nothing behind.
    ``keys``: the batch's own keys (the forward also receives the Trainer's, e.g. ``num_items_in_batch``).
    """

    violations: tuple[BatchViolation, ...]
    rank: int
    worker: int | None
    batch_number: int
    keys: tuple[str, ...]


class BatchChecker:
    """What a check needs, without the model: picklable into DataLoader workers."""

    def __init__(self, limits: LiveLimits, config: dict[str, Any] | None, evidence_dir: Path | None, *,
                 keep_runs: int | None = KEEP_RUNS) -> None:
        self.limits = limits
        self.config = config
        self.evidence_dir = evidence_dir
        self.keep_runs = keep_runs
        self.run = new_run_id()  # made before the workers fork: one run for all of them

    def check(self, batch: Mapping[str, Any], *, batch_number: int, worker: int | None,
              host_only: bool) -> None:
        """Raise :class:`BatchIndexError` when ``batch`` would index out of range; else return."""
        message = self.verdict(batch, batch_number=batch_number, worker=worker, host_only=host_only)
        if message is not None:
            raise BatchIndexError(message)

    def verdict(self, batch: Mapping[str, Any], *, batch_number: int, worker: int | None,
                host_only: bool) -> str | None:
        """The error message for a bad ``batch`` (its evidence written), or None when it is safe."""
        violations = check_batch(batch, self.limits, host_only=host_only)
        if not violations:
            return None
        return self.failed(batch, violations, rank=current_rank(), worker=worker, batch_number=batch_number)

    def deferred(self, batch: Mapping[str, Any], *, batch_number: int, worker: int | None) -> DeferredVerdict | None:
        """The verdict on a host-side ``batch`` without its evidence (written if it reaches the model)."""
        violations = check_batch(batch, self.limits, host_only=True)
        if not violations:
            return None
        return DeferredVerdict(tuple(violations), current_rank(), worker, batch_number, tuple(map(str, batch)))

    def failed(self, batch: Mapping[str, Any], violations: list[BatchViolation], *, rank: int, worker: int | None,
               batch_number: int) -> str:
        """The error message of a batch that failed, its evidence written (the only batches that leave any)."""
        evidence = None
        if self.evidence_dir is not None:
            try:
                evidence = str(write_evidence(self.evidence_dir, batch, self.limits, violations, rank=rank,
                                              worker=worker, batch_number=batch_number, config=self.config,
                                              run=self.run, keep_runs=self.keep_runs))
            except OSError as exc:
                evidence = f"(not written: {exc})"
        return format_error(violations, self.limits, rank=rank, worker=worker, batch_number=batch_number,
                            evidence=evidence)


def format_error(violations: list[BatchViolation], limits: LiveLimits, *, rank: int, worker: int | None,
                 batch_number: int, evidence: str | None) -> str:
    first = violations[0]
    where = f"rank {rank}, " + ("main process" if worker is None else f"DataLoader worker {worker}")
    lines = [
        f"{first.code} in batch {batch_number} ({where}) for {limits.model_class}: {first.message}",
        f"  likely cause: {first.cause}",
        f"  fix: {first.fix}",
    ]
    lines += [f"  also {v.code}: {v.message}" for v in violations[1:]]
    if evidence:
        lines.append(f"  evidence: {evidence}")
        if not evidence.startswith("("):
            lines.append(f"  replay it on CPU: hf-vocab-audit repro {evidence} [MODEL_DIR]")
    details = {"rank": rank, "worker": worker, "batch": batch_number, "evidence": evidence,
               "model_class": limits.model_class, "violations": [v.to_dict() for v in violations]}
    lines.append(MARKER + json.dumps(details, default=str))
    return "\n".join(lines)


class GuardedCollator:
    """A data collator whose every batch is checked on the host, where it was built (in the worker).

    With ``defer_key`` (set by ``guard_trainer``) a bad batch is not raised at once but carries its verdict
    (:class:`DeferredVerdict`) under that key, and a forward pre-hook writes its evidence and raises when the
    batch reaches the model: the Trainer prefetches batches, and the run should stop at the step that would
    have crashed, leaving evidence of that batch only.
    """

    def __init__(self, collator: Callable[..., Any], checker: BatchChecker, defer_key: str | None = None) -> None:
        self.collator = collator
        self.checker = checker
        self.defer_key = defer_key
        self.calls = 0

    def __call__(self, features: Any) -> Any:
        batch = self.collator(features)
        worker, workers = _worker()
        # Batches go to workers round-robin, so this is the batch's index in the epoch's order.
        number = self.calls * workers + (worker or 0)
        self.calls += 1
        if not isinstance(batch, Mapping):
            return batch
        if self.defer_key is not None and isinstance(batch, MutableMapping):
            deferred = self.checker.deferred(batch, batch_number=number, worker=worker)
            if deferred is not None:
                batch[self.defer_key] = deferred
            return batch
        message = self.checker.verdict(batch, batch_number=number, worker=worker, host_only=True)
        if message is not None:
            raise BatchIndexError(message)
        return batch


class Guard:
    """Checks batches against ``model``'s live limits; see :func:`hf_vocab_audit.guard.guard`."""

    def __init__(self, model: Any, tokenizer: Any = None, *, evidence_dir: str | Path | None | bool = True,
                 ignore_index: int = -100, keep_runs: int | None = KEEP_RUNS) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.ignore_index = ignore_index
        if evidence_dir is True:
            self.evidence_dir: Path | None = default_dir()
        elif evidence_dir is False or evidence_dir is None:
            self.evidence_dir = None
        else:
            self.evidence_dir = Path(evidence_dir)
        self.checker = BatchChecker(limits_of(model, tokenizer, ignore_index=ignore_index), _config_dict(model),
                                    self.evidence_dir, keep_runs=keep_runs)
        self._hook_calls = 0
        self._defer_handle: Any = None

    @property
    def limits(self) -> LiveLimits:
        return self.checker.limits

    def refresh(self) -> LiveLimits:
        """Re-read the limits (after ``resize_token_embeddings`` or a new head); wrapped collators see them."""
        self.checker.limits = limits_of(self.model, self.tokenizer, ignore_index=self.ignore_index)
        self.checker.config = _config_dict(self.model)
        return self.checker.limits

    def check(self, batch: Mapping[str, Any], *, batch_number: int = 0) -> None:
        """Check one batch now (any device; a device tensor's min/max is a sync)."""
        self.checker.check(batch, batch_number=batch_number, worker=_worker()[0], host_only=False)

    def preflight(self, *, fail_on: str = "error", stream: TextIO | None = None) -> Any:
        """Run the static rules on the in-memory model and tokenizer, like ``check``: print, then raise.

        Prints the text report to ``stream`` (default stderr) when there is a finding; raises
        :class:`PreflightError` (carrying the report) when one is at or above ``fail_on``.
        """
        from ..formats import render
        from .preflight import audit_in_memory

        # Without a tokenizer the model alone is audited; the tokenizer is a gap the caller has said so of
        # (guard_trainer warns once), so it does not fail the preflight by itself.
        report = audit_in_memory(self.model, self.tokenizer).judged(fail_on, allow_partial=self.tokenizer is None)
        if report.findings:
            (stream or sys.stderr).write(render(report, "text"))
        if report.verdict().fails:
            codes = sorted({f.code for f in report.gate_failures()})
            raise PreflightError(f"preflight: the model and tokenizer fail {', '.join(codes)} "
                                 "(see the report above; hf-vocab-audit explain CODE)", report)
        return report

    def wrap(self, collator: Callable[..., Any]) -> GuardedCollator:
        """``collator`` with every batch checked on the host, in the DataLoader worker, before ``.to(device)``."""
        return GuardedCollator(collator, self.checker)

    def wrap_deferred(self, collator: Callable[..., Any]) -> GuardedCollator:
        """Like :meth:`wrap`, but a bad batch raises when it reaches ``model``'s forward (a pre-hook pops the
        marker key, so the forward never sees it), and only then leaves evidence. For loaders that prefetch:
        the Trainer's."""
        if self._defer_handle is None:
            checker = self.checker

            def pop_marker(_module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any]:
                verdict = kwargs.pop(DEFER_KEY, None)
                if isinstance(verdict, DeferredVerdict):
                    batch = {k: kwargs[k] for k in verdict.keys if k in kwargs}
                    raise BatchIndexError(checker.failed(batch, list(verdict.violations), rank=verdict.rank,
                                                         worker=verdict.worker, batch_number=verdict.batch_number))
                if verdict is not None:
                    raise BatchIndexError(str(verdict))
                return args, kwargs

            self._defer_handle = self.model.register_forward_pre_hook(pop_marker, with_kwargs=True)
        return GuardedCollator(collator, self.checker, defer_key=DEFER_KEY)

    @contextlib.contextmanager
    def hooks(self) -> Iterator[Guard]:
        """Check every forward's inputs in a pre-hook (for batches built on the device; each check syncs)."""
        model = self.model
        names = list(inspect.signature(model.forward).parameters)

        def pre_hook(_module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
            batch = dict(zip(names, args))
            batch.update(kwargs)
            number = self._hook_calls
            self._hook_calls += 1
            self.checker.check(batch, batch_number=number, worker=None, host_only=False)

        handle = model.register_forward_pre_hook(pre_hook, with_kwargs=True)
        try:
            yield self
        finally:
            handle.remove()
