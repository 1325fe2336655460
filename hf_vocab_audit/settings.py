"""Gate settings from ``pyproject.toml`` ``[tool.hf-vocab-audit]`` and ``hf-vocab-audit.toml`` next to the model.

Precedence, lowest to highest: defaults, the nearest ``pyproject.toml`` (from the working directory
upward) that has a ``[tool.hf-vocab-audit]`` table, the model's ``hf-vocab-audit.toml`` (or ``--config``),
then command-line flags. The per-model allowlist (``[[allow]]``) lives only in the model's file.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .core.options import BY_KEY, OPTIONS, Option
from .core.outcome import FAIL_ON
from .errors import AuditError
from .facts.tree import regular_file_inside
from .io.jsonfile import read_bytes

if TYPE_CHECKING:  # the findings and report models are imported after the gate has read the target
    from .core.findings import Finding
    from .core.fixes import Applicability
    from .core.report import Report

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

MODEL_FILE = "hf-vocab-audit.toml"
TOOL_TABLE = "hf-vocab-audit"
KEYS = (*(o.key for o in OPTIONS), "extend-safe-fixes", "extend-unsafe-fixes")  # every option of ``check`` but
# --config (which names this file), and the fix-safety keys (settings only, as in ruff)
MATCH_KEYS = ("file", "key", "tensor", "token", "token_id", "split", "column")


@dataclass(frozen=True)
class AllowEntry:
    """An accepted finding: its rule, optional location fields it must match, and why it is fine."""

    code: str
    reason: str
    match: dict[str, Any] = field(default_factory=dict)
    where: str = ""  # "hf-vocab-audit.toml allow[0]", for messages

    def matches(self, finding: Finding) -> bool:
        if finding.code != self.code:
            return False
        return all(getattr(finding.location, k) == v for k, v in self.match.items())


@dataclass(frozen=True)
class Settings:
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] | None = None
    fail_on: str = "error"
    exit_zero: bool = False
    allow_partial: bool = False  # a report with gaps says PARTIAL (exit 0) instead of failing closed (exit 2)
    allow: tuple[AllowEntry, ...] = ()
    sources: tuple[str, ...] = ()  # files read, lowest precedence first
    chat_format: str | None = None  # --chat-format for --dataset (TRL's format of the splits)
    messages_column: str | None = None  # --messages-column
    extend_safe_fixes: tuple[str, ...] = ()  # rules whose unsafe fix --fix applies as safe (see fix_safety)
    extend_unsafe_fixes: tuple[str, ...] = ()  # rules whose safe fix needs --unsafe-fixes
    values: dict[str, Any] = field(default_factory=dict)  # every option set (``Option.attr`` -> value), flags last


def find_pyproject(start: Path) -> Path | None:
    """The nearest ``pyproject.toml`` at or above ``start`` with a ``[tool.hf-vocab-audit]`` table."""
    for folder in (start.resolve(), *start.resolve().parents):
        path = folder / "pyproject.toml"
        if path.is_file() and TOOL_TABLE in _read_toml(path).get("tool", {}):
            return path
    return None


MAX_SETTINGS_BYTES = 1024 * 1024  # a settings file is a few lines; an allowlist of thousands still fits


def _read_toml(path: Path) -> dict[str, Any]:
    """The TOML file at ``path``, read only up to MAX_SETTINGS_BYTES (a 4 GiB sparse file was read whole)."""
    try:
        text = read_bytes(path, MAX_SETTINGS_BYTES).decode("utf-8")
        return tomllib.loads(text)
    except UnicodeDecodeError as exc:
        raise AuditError(path, f"is not valid UTF-8 (byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        raise AuditError(path, f"is not valid TOML: {exc}") from None
    except RecursionError:
        raise AuditError(path, "is not valid TOML: nested too deeply") from None
    except OSError as exc:
        raise AuditError(path, f"cannot be read: {exc.strerror or exc}") from None


def _strings(path: Path, key: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str):  # refused, as audit(select="HVA101") is: one spelling, a list, everywhere
        raise AuditError(path, f"{key}: must be a list of rule codes, prefixes or names, not a string (write [{value!r}])")
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise AuditError(path, f"{key}: must be a list of rule codes, prefixes or names")
    from .rules.registry import validate_selectors

    unknown = validate_selectors(value)
    if unknown:
        raise AuditError(path, f"{key}: unknown rule code or name {', '.join(map(repr, unknown))}")
    return tuple(value)


def _value(path: Path, option: Option, where: str, value: Any) -> Any:
    """One option's value from a settings file, checked against its kind (paths: relative to the file)."""
    name = f"{where}{option.key}"
    kind = option.kind
    if kind == "bool":
        if not isinstance(value, bool):
            raise AuditError(path, f"{name}: must be true or false, not {value!r}"[:200])
        return value
    if kind == "int":
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise AuditError(path, f"{name}: must be a whole number >= 1, not {value!r}"[:200])
        return value
    if kind in ("choice", "choices"):
        values = value if kind == "choices" and isinstance(value, list) else [value]
        if kind == "choices" and not isinstance(value, list):
            raise AuditError(path, f"{name}: must be a list of {', '.join(option.choices)}"[:200])
        bad = [v for v in values if v not in option.choices]
        if bad:
            raise AuditError(path, f"{name}: must be one of {', '.join(option.choices)}, not {bad[0]!r}"[:200])
        return tuple(values) if kind == "choices" else value
    if kind in ("strs", "paths", "specs"):
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise AuditError(path, f"{name}: must be a list of strings, not {value!r}"[:200])
        if kind == "specs":  # a data file or folder beside the settings file, else as given (a Hub id, a glob)
            return tuple(str(_relative(path, v)) if _relative(path, v).exists() else v for v in value)
        return tuple(_relative(path, v) for v in value) if kind == "paths" else tuple(value)
    if not isinstance(value, str) or not value:
        raise AuditError(path, f"{name}: must be a string, not {value!r}"[:200])
    return _relative(path, value) if kind == "path" else value


def _relative(settings: Path, value: str) -> Path:
    """A path in a settings file, read from the folder of that file (as ruff and mypy read theirs)."""
    path = Path(value).expanduser()
    return path if path.is_absolute() else settings.parent / path


def _options(path: Path, table: dict[str, Any], where: str, model_file: bool = False) -> dict[str, Any]:
    """Validate the option keys of one table; returns the options present, by ``Option.attr``.

    ``model_file``: the checkpoint's own hf-vocab-audit.toml, which a downloaded checkpoint brings: it may
    not name paths, write files, reach a Ray cluster or relax the fix's safety (``Option.model_file``)."""
    out: dict[str, Any] = {}
    for key, value in table.items():
        option = BY_KEY.get(key)
        if key in ("select", "ignore"):
            out[key] = _strings(path, f"{where}{key}", value)
        elif key == "fail-on":
            if value not in FAIL_ON:
                raise AuditError(path, f"{where}fail-on: must be one of {', '.join(FAIL_ON)}, not {value!r}")
            out["fail_on"] = value
        elif option is not None:
            if model_file and not option.model_file:
                raise AuditError(path, f"{key}: a checkpoint's own {MODEL_FILE} cannot set it (it names a path, "
                                 "writes, or relaxes --fix): set it in pyproject.toml, --config or a flag")
            out[option.attr] = _value(path, option, where, value)
        elif key in FIX_SAFETY_KEYS:
            if model_file and key == "extend-safe-fixes":
                raise AuditError(path, f"{key}: a checkpoint's own {MODEL_FILE} cannot set it (it relaxes --fix): "
                                 "set it in pyproject.toml or --config")
            out[key.replace("-", "_")] = _strings(path, f"{where}{key}", value)
        elif key == "allow" and where:
            raise AuditError(path, f"{where}allow: the allowlist is per model: put it in {MODEL_FILE} next to the model")
        elif key != "allow":
            raise AuditError(path, f"unknown key {where}{key!r} (known: {', '.join(KEYS)}, allow)")
    return out


def _allow(path: Path, value: Any) -> tuple[AllowEntry, ...]:
    from .rules import get_rule

    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise AuditError(path, "allow: must be an array of tables ([[allow]] entries)")
    entries = []
    for i, entry in enumerate(value):
        where = f"allow[{i}]"
        for key in entry:
            if key not in ("code", "reason", *MATCH_KEYS):
                raise AuditError(path, f"{where}: unknown key {key!r} (known: code, reason, {', '.join(MATCH_KEYS)})")
        code, reason = entry.get("code"), entry.get("reason")
        rule = get_rule(code) if isinstance(code, str) else None
        if rule is None:
            raise AuditError(path, f"{where}.code: unknown rule code or name {code!r}")
        if not isinstance(reason, str) or not reason.strip():
            raise AuditError(path, f"{where}.reason: say why this finding is accepted (a non-empty string)")
        match = {k: entry[k] for k in MATCH_KEYS if k in entry}
        for k, v in match.items():
            ok = isinstance(v, int) and not isinstance(v, bool) if k == "token_id" else isinstance(v, str)
            if not ok:
                raise AuditError(path, f"{where}.{k}: must be {'an integer' if k == 'token_id' else 'a string'}")
        entries.append(AllowEntry(rule.code, reason.strip(), match, f"{path.name} {where}"))
    return tuple(entries)


def load_settings(
    model_dir: Path | None,
    *,
    cwd: Path | None = None,
    config: Path | None = None,
    overrides: dict[str, Any] | None = None,
) -> Settings:
    """Merge defaults, pyproject, the model's file (or ``config``) and ``overrides`` (flags; None = not given)."""
    values: dict[str, Any] = {}
    sources: list[str] = []
    pyproject = find_pyproject(cwd or Path.cwd())
    if pyproject is not None:
        values.update(_options(pyproject, _read_toml(pyproject)["tool"][TOOL_TABLE], "[tool.hf-vocab-audit] "))
        sources.append(str(pyproject))
    allow: tuple[AllowEntry, ...] = ()
    model_file = config if config is not None else (model_dir / MODEL_FILE if model_dir is not None else None)
    if config is not None and not config.is_file():
        raise AuditError(config, "config file does not exist")
    if config is None and model_file is not None and model_dir is not None and (
        model_file.is_symlink() or model_file.exists()
    ):  # the checkpoint's own file can relax the gate: it must not come from outside the checkpoint
        regular_file_inside(model_file, model_dir)
    if model_file is not None and model_file.is_file():
        data = _read_toml(model_file)
        values.update(_options(model_file, data, "", model_file=config is None))
        allow = _allow(model_file, data.get("allow", []))
        sources.append(str(model_file))
    values.update({k: v for k, v in (overrides or {}).items() if v is not None})
    if "fail_on" in values and values["fail_on"] not in FAIL_ON:
        raise AuditError(None, f"--fail-on must be one of {', '.join(FAIL_ON)}")
    for key in ("select", "ignore"):
        if key in values:
            values[key] = tuple(values[key])
    fields = ("select", "ignore", "fail_on", "exit_zero", "allow_partial", "chat_format", "messages_column",
              "extend_safe_fixes", "extend_unsafe_fixes")
    return Settings(**{k: v for k, v in values.items() if k in fields}, allow=allow, sources=tuple(sources),
                    values=values)


def mark_allowed(findings: Iterable[Finding], entries: tuple[AllowEntry, ...]) -> tuple[list[Finding], list[AllowEntry]]:
    """Mark findings an entry accepts (``Finding.allowed`` = its reason); also return entries that matched nothing."""
    used: set[int] = set()
    out = []
    for f in findings:
        hit = next((i for i, e in enumerate(entries) if e.matches(f)), None)
        if hit is not None:
            used.add(hit)  # also when an earlier pass marked it (--fix's auditor marks the output's findings)
            if f.allowed is None:
                f = replace(f, allowed=entries[hit].reason)
        out.append(f)
    return out, [e for i, e in enumerate(entries) if i not in used]


def apply_allowlist(report: Report, entries: tuple[AllowEntry, ...]) -> tuple[Report, list[AllowEntry]]:
    """The report with the findings an entry accepts marked; also the entries that matched nothing."""
    if not entries:
        return report, []
    findings, unused = mark_allowed(report.findings, entries)
    return replace(report, findings=tuple(findings)), unused


# ---- fix safety (ruff's extend-safe-fixes / extend-unsafe-fixes) ----------------------------------------

FIX_SAFETY_KEYS = ("extend-safe-fixes", "extend-unsafe-fixes")


def fix_safety(settings: Settings) -> Callable[[str, Applicability], Applicability] | None:
    """What ``--fix`` asks for each finding's fix: the applicability the settings give the rule's fix.

    ``extend-safe-fixes`` (rule codes, prefixes or names) makes a rule's unsafe fix safe: ``--fix`` applies it
    without ``--unsafe-fixes``; ``extend-unsafe-fixes`` makes a safe fix unsafe (a rule in both stays unsafe).
    A display-only fix stays display-only. None when the settings say nothing."""
    if not settings.extend_safe_fixes and not settings.extend_unsafe_fixes:
        return None
    from .core.fixes import Applicability
    from .rules.registry import get_rule

    def matches(code: str, selectors: tuple[str, ...]) -> bool:
        rule = get_rule(code)
        name = rule.name if rule is not None else None
        return any(s.upper() == "ALL" or code.startswith(s.upper()) or s == name for s in selectors)

    def applicability(code: str, declared: Applicability) -> Applicability:
        if declared is Applicability.DISPLAY_ONLY:
            return declared
        if matches(code, settings.extend_unsafe_fixes):
            return Applicability.UNSAFE
        if matches(code, settings.extend_safe_fixes):
            return Applicability.SAFE
        return declared

    return applicability

