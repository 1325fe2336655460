"""The CI gate: resolve a target (folder or Hub id), load settings, audit, apply the allowlist.

    from hf_vocab_audit.gate import run_gate
    outcome = run_gate("models/my-model")           # or "org/name@revision"
    sys.exit(outcome.exit_code)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .audit import audit, auditable, make_report
from .core.findings import Source
from .core.outcome import Outcome
from .core.report import Report
from .errors import AuditError
from .facts import Facts, gather
from .facts.hub import HubCheckout, checkout, parse_hub_ref
from .rules import selected
from .rules.coverage import ensure_auditable
from .rules.runner import run_static
from .settings import AllowEntry, Settings, apply_allowlist, fix_safety, load_settings


@dataclass(frozen=True)
class GateOutcome:
    """The judged report (``report.outcome`` holds the verdict), the settings used, allowlist entries unused."""

    report: Report
    settings: Settings
    unused_allow: tuple[AllowEntry, ...]

    @property
    def outcome(self) -> Outcome:
        return self.report.verdict()

    @property
    def exit_code(self) -> int:
        return self.outcome.exit_code


def audit_hub_checkout(
    co: HubCheckout,
    *,
    tokenizer: str | Path | None = None,
    select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
) -> Report:
    """Audit the files of a Hub commit (see :func:`hf_vocab_audit.facts.hub.checkout`)."""
    start = time.perf_counter()
    facts = gather(co.folder, tokenizer, tensors_from=lambda _folder: co.tensors)
    if co.tensors is None and co.tensors_missing:
        facts = replace(facts, missing={**facts.missing, "tensors": co.tensors_missing})
    ensure_auditable(facts)
    rules = selected(select, ignore)
    run = run_static(facts, rules, lines=False)
    return make_report(f"{co.ref.repo_id}@{co.commit}", facts, run, start, source=Source.HUB,
                       rules_selected=auditable(rules))


def _checker(tokenizer: str | Path | None, settings: Settings, audit_options: dict[str, Any] | None) -> Callable[..., Report]:
    """The audit `check` runs on a folder (the same options, the allowlist applied), for --fix to run on its
    input and on its output (``facts``: the folder as --fix read it)."""

    def check(folder: Path, *, facts: Facts | None = None) -> Report:
        report = audit(folder, tokenizer=tokenizer, select=settings.select, ignore=settings.ignore, facts=facts,
                       **{k: v for k, v in _chat_options(audit_options, settings).items() if k != "source"})
        return apply_allowlist(report, settings.allow)[0]

    return check


def run_gate(
    target: str,
    *,
    tokenizer: str | Path | None = None,
    config: Path | None = None,
    cwd: Path | None = None,
    audit_options: dict[str, Any] | None = None,
    fix_options: dict[str, Any] | None = None,
    **overrides: Any,
) -> GateOutcome:
    """Audit ``target`` (a local folder, else ``org/name[@revision]`` on the Hub) under the merged settings.

    ``overrides`` are command-line values (``select``, ``ignore``, ``fail_on``, ``exit_zero``,
    ``allow_partial``); None = not given.
    ``audit_options`` are passed to :func:`audit` for a local folder (``weights=True``, dataset options).
    ``fix_options`` (``--fix``): repair a copy with :func:`hf_vocab_audit.fix.fix_checkpoint` and report its audit.
    Raises :class:`AuditError` for bad input, bad configuration or an unreachable Hub.
    """
    folder = Path(target)
    ref = None if folder.exists() else parse_hub_ref(target)
    if ref is None:
        settings = load_settings(folder if folder.is_dir() else None, cwd=cwd, config=config, overrides=overrides)
        from .facts.adapter import is_adapter
        from .facts.gguf import is_gguf_target

        if is_gguf_target(folder):  # llama.cpp's format: metadata and tensor infos (audit_gguf)
            from .audit import audit_gguf

            if fix_options is not None or any((audit_options or {}).get(k) for k in ("weights", "datasets", "base",
                                                                                     "target_kind")):
                raise AuditError(target, "a GGUF is checked from its metadata only: --fix, --weights, --dataset, "
                                 "--base and --target apply to a transformers checkpoint folder")
            report = audit_gguf(folder, select=settings.select, ignore=settings.ignore, tokenizer=tokenizer,
                                source=(audit_options or {}).get("source"))
        elif (audit_options or {}).get("source") is not None:
            raise AuditError(target, "--source HF_DIR applies to a GGUF target (check model.gguf --source HF_DIR)")
        elif fix_options is not None and is_adapter(folder):  # refused, with the reasons
            from .fix.adapter_refusal import refuse_adapter_fix

            report = refuse_adapter_fix(folder, base=(audit_options or {}).get("base"), tokenizer=tokenizer,
                                        select=settings.select, ignore=settings.ignore)
        elif fix_options is not None:
            from .fix import repair

            if (audit_options or {}).get("base") is not None:
                raise AuditError(target, "--base applies to a PEFT adapter folder (adapter_config.json) only")
            if (audit_options or {}).get("datasets"):
                raise AuditError(target, "--dataset cannot be combined with --fix: fix the checkpoint, then audit "
                                 "the dataset against the fixed copy")
            report = repair(folder, audit=_checker(tokenizer, settings, audit_options), tokenizer=tokenizer,
                            applicability=fix_safety(settings), **{k: v for k, v in fix_options.items() if k != "weights"})
        else:
            report = audit(folder, tokenizer=tokenizer, select=settings.select, ignore=settings.ignore,
                           **{k: v for k, v in _chat_options(audit_options, settings).items() if k != "source"})
    else:
        if fix_options is not None:
            raise AuditError(target, "--fix needs a local checkpoint folder, not a Hub id")
        flags = {"weights": "--weights", "datasets": "--dataset", "base": "--base", "source": "--source",
                 "target_kind": "--target"}
        local_only = [flag for key, flag in flags.items() if (audit_options or {}).get(key)]
        if local_only:
            options = ", ".join(local_only)
            raise AuditError(target, f"{options} need a local checkpoint folder (Hub targets are audited "
                             "from their small files and headers only)")
        with ExitStack() as stack:
            try:
                co = stack.enter_context(checkout(ref))
            except AuditError as exc:  # say so when the user meant a local folder
                raise AuditError(exc.path, f"{exc.problem} (and no local folder {target!r} exists)") from None
            settings = load_settings(co.folder, cwd=cwd, config=config, overrides=overrides)
            report = audit_hub_checkout(co, tokenizer=tokenizer, select=settings.select, ignore=settings.ignore)
    report, unused = apply_allowlist(report, settings.allow)
    return GateOutcome(report.judged(settings.fail_on, settings.exit_zero, settings.allow_partial), settings,
                       tuple(unused))


def _chat_options(audit_options: dict[str, Any] | None, settings: Settings) -> dict[str, Any]:
    """``audit_options`` with the settings files' chat-format / messages-column where no flag gave them."""
    out = dict(audit_options or {})
    if out.get("datasets"):
        for key in ("chat_format", "messages_column"):
            if out.get(key) is None and getattr(settings, key) is not None:
                out[key] = getattr(settings, key)
    return out


__all__ = ["AuditError", "GateOutcome", "audit_hub_checkout", "run_gate"]
