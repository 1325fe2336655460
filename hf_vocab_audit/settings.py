"""Gate settings: the operator's files and flags; a target's own file may only make the gate stricter.

Precedence, lowest to highest: defaults, the nearest ``pyproject.toml`` (from the working directory upward)
that has a ``[tool.hf-vocab-audit]`` table, the operator's settings file (``--config FILE``, else
``hf-vocab-audit.toml`` in the working directory), then the target's own ``hf-vocab-audit.toml`` where it is
stricter, then command-line flags. The allowlist (``[[allow]]``) lives in the operator's settings file.

The target is what the gate judges, and CI audits pull requests: a settings file inside it (its
``hf-vocab-audit.toml``, or a ``pyproject.toml`` found from a working directory inside it) is read, but only
the options whose ``Option.stricter`` says how are obeyed, and only where they tighten the operator's
value; every other key is reported (rule HVA003) and not obeyed. ``--config FILE`` replaces the target's
file: it is not read at all.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .core.options import BY_ATTR, SETTINGS_KEYS, Kind, Option, OptionValues
from .core.outcome import FAIL_ON
from .core.target_settings import IgnoredSettings
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
SETTING_KEYS = {o.key: o for o in SETTINGS_KEYS}  # every option of ``check`` but --config (which names this
# file), and the fix-safety keys (settings only, as in ruff)
KEYS = tuple(SETTING_KEYS)
FIX_SAFETY = tuple(o.attr for o in SETTINGS_KEYS if not o.flag)  # kept in Settings: the fix reads them there
MATCH_KEYS = ("file", "key", "tensor", "token", "token_id", "split", "column")


@dataclass(frozen=True)
class AllowEntry:
    """An accepted finding: its rule, optional location fields it must match, and why it is fine."""

    code: str
    reason: str
    match: dict[str, Any] = field(default_factory=dict)
    where: str = ""  # "gate.toml allow[0]", for messages

    def matches(self, finding: Finding) -> bool:
        if finding.code != self.code:
            return False
        return all(getattr(finding.location, k) == v for k, v in self.match.items())


@dataclass(frozen=True)
class Settings:
    """What the settings files and flags set: the options of ``check`` (``values``; ``gate`` builds the typed
    options from them), the allowlist, the fix-safety keys, the files read and the target's keys not obeyed."""

    values: OptionValues = OptionValues()  # every option of ``check`` set, flags last
    allow: tuple[AllowEntry, ...] = ()
    sources: tuple[str, ...] = ()  # files read, lowest precedence first
    extend_safe_fixes: tuple[str, ...] = ()  # rules whose unsafe fix --fix applies as safe (see fix_safety)
    extend_unsafe_fixes: tuple[str, ...] = ()  # rules whose safe fix needs --unsafe-fixes
    ignored: tuple[IgnoredSettings, ...] = ()  # keys of the target's own settings files not obeyed (HVA003)


def find_pyproject(start: Path) -> Path | None:
    """The nearest ``pyproject.toml`` at or above ``start`` with a ``[tool.hf-vocab-audit]`` table."""
    return next(_pyprojects(start), None)


def _pyprojects(start: Path) -> Iterator[Path]:
    """Every ``pyproject.toml`` at or above ``start`` with a ``[tool.hf-vocab-audit]`` table, nearest first."""
    for folder in (start.resolve(), *start.resolve().parents):
        path = folder / "pyproject.toml"
        if path.is_file() and TOOL_TABLE in _read_toml(path).get("tool", {}):
            yield path


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
    if kind is Kind.RULES:
        return _strings(path, name, value)
    if kind is Kind.BOOL:
        if not isinstance(value, bool):
            raise AuditError(path, f"{name}: must be true or false, not {value!r}"[:200])
        return value
    if kind is Kind.INT:
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise AuditError(path, f"{name}: must be a whole number >= 1, not {value!r}"[:200])
        return value
    if kind in (Kind.CHOICE, Kind.CHOICES):
        choices = option.choice_values
        values = value if kind is Kind.CHOICES and isinstance(value, list) else [value]
        if kind is Kind.CHOICES and not isinstance(value, list):
            raise AuditError(path, f"{name}: must be a list of {', '.join(choices)}"[:200])
        bad = [v for v in values if v not in choices]
        if bad:
            raise AuditError(path, f"{name}: must be one of {', '.join(choices)}, not {bad[0]!r}"[:200])
        return tuple(values) if kind is Kind.CHOICES else value
    if kind.many:
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise AuditError(path, f"{name}: must be a list of strings, not {value!r}"[:200])
        if kind is Kind.SPECS:  # a data file or folder beside the settings file, else as given (a Hub id, a glob)
            return tuple(str(_relative(path, v)) if _relative(path, v).exists() else v for v in value)
        return tuple(_relative(path, v) for v in value) if kind is Kind.PATHS else tuple(value)
    if not isinstance(value, str) or not value:
        raise AuditError(path, f"{name}: must be a string, not {value!r}"[:200])
    return _relative(path, value) if kind is Kind.PATH else value


def _relative(settings: Path, value: str) -> Path:
    """A path in a settings file, read from the folder of that file (as ruff and mypy read theirs)."""
    path = Path(value).expanduser()
    return path if path.is_absolute() else settings.parent / path


def _options(path: Path, table: dict[str, Any], where: str) -> dict[str, Any]:
    """Validate the option keys of one operator's table; returns the options present, by ``Option.attr``."""
    out: dict[str, Any] = {}
    for key, value in table.items():
        option = SETTING_KEYS.get(key)
        if option is not None:
            out[option.attr] = _value(path, option, where, value)
        elif key == "allow" and where:
            raise AuditError(path, f"{where}allow: the allowlist goes in {MODEL_FILE} in the working directory "
                             "or in the --config FILE")
        elif key != "allow":
            raise AuditError(path, f"unknown key {where}{key!r} (known: {', '.join(KEYS)}, allow)")
    return out


def _from_target(path: Path, table: dict[str, Any], where: str, values: dict[str, Any]) -> list[str]:
    """Obey the keys of a target's own settings table that tighten the gate (into ``values``); return the
    keys not obeyed, in file order: any other key, and a stricter-only one that would relax the operator's.

    Only the obeyed keys' values are checked (a bad one exits 2 naming it): the rest are never used."""
    ignored = []
    for key, value in table.items():
        option = SETTING_KEYS.get(key)
        if option is None or option.stricter is None:
            ignored.append(key)
            continue
        asked = _value(path, option, where, value)
        merged = option.stricter(values.get(option.attr), asked)
        if merged is None:
            ignored.append(key)
        else:
            values[option.attr] = merged
    return ignored


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


def _inside(path: Path, root: Path | None) -> bool:
    """Whether ``path`` lies in ``root`` (where it is, or where it resolves to)."""
    if root is None:
        return False
    top = root.resolve()
    return any(p == top or top in p.parents for p in (path.parent.resolve() / path.name, path.resolve()))


def _same(path: Path, other: Path | None) -> bool:
    return other is not None and other.exists() and os.path.samefile(path, other)


def load_settings(
    model_dir: Path | None,
    *,
    cwd: Path | None = None,
    config: Path | None = None,
    overrides: OptionValues | Mapping[str, Any] | None = None,
) -> Settings:
    """Merge defaults, the operator's pyproject and settings file (``config``, else the working directory's
    hf-vocab-audit.toml), what the target's own file tightens, and ``overrides`` (flags; None = not given).

    ``model_dir``: the target folder (None: a file or live objects). A settings file found from a working
    directory inside it is the target's, not the operator's."""
    here = cwd or Path.cwd()
    values: dict[str, Any] = {}
    sources: list[str] = []
    in_target: list[tuple[Path, dict[str, Any], str]] = []  # (file, table, where) of the target's own files
    for pyproject in _pyprojects(here):
        table = _read_toml(pyproject)["tool"][TOOL_TABLE]
        if not _inside(pyproject, model_dir):
            values.update(_options(pyproject, table, "[tool.hf-vocab-audit] "))
            sources.append(str(pyproject))
            break
        assert model_dir is not None
        regular_file_inside(pyproject, model_dir)
        in_target.append((pyproject, table, "[tool.hf-vocab-audit] "))
    allow: tuple[AllowEntry, ...] = ()
    if config is not None and not config.is_file():
        raise AuditError(config, "config file does not exist")
    operator = config if config is not None else here / MODEL_FILE
    own = model_dir / MODEL_FILE if model_dir is not None and config is None else None
    if config is not None or (operator.is_file() and not _inside(operator, model_dir)):
        data = _read_toml(operator)
        values.update(_options(operator, data, ""))
        allow = _allow(operator, data.get("allow", []))
        sources.append(str(operator))
    elif model_dir is not None and operator.is_file() and not _same(operator, own):
        regular_file_inside(operator, model_dir)  # run from a folder inside the target: the file is the target's
        in_target.append((operator, _read_toml(operator), ""))
    if own is not None and model_dir is not None and (own.is_symlink() or own.exists()):
        regular_file_inside(own, model_dir)  # a link out of the checkpoint is refused, as for its other files
        in_target.append((own, _read_toml(own), ""))
    ignored = []
    for path, table, where in in_target:
        keys = _from_target(path, table, where, values)
        sources.append(str(path))
        if keys:
            assert model_dir is not None
            name = os.path.relpath(path.parent.resolve() / path.name, model_dir.resolve())
            ignored.append(IgnoredSettings(Path(name).as_posix(), tuple(keys)))
    flags = overrides.given if isinstance(overrides, OptionValues) else OptionValues(overrides or {}).given
    values.update({k: v for k, v in flags.items() if BY_ATTR[k].settable})  # (--config named the files read)
    if "fail_on" in values and values["fail_on"] not in FAIL_ON:
        raise AuditError(None, f"--fail-on must be one of {', '.join(FAIL_ON)}")
    for option in SETTINGS_KEYS:
        if option.kind is Kind.RULES and option.attr in values:
            values[option.attr] = tuple(values[option.attr])
    safety = {attr: values.pop(attr) for attr in FIX_SAFETY if attr in values}
    return Settings(OptionValues(values), allow, tuple(sources), **safety, ignored=tuple(ignored))


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

