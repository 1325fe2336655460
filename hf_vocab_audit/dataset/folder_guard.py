"""Local dataset specs from untrusted sources: which files may be read, decided before ``datasets`` runs.

``datasets`` globs recursively through directory links (three self-links make 3^depth paths), opens
FIFOs (blocking forever) and follows a folder README's ``configs`` to any ``data_files``: URLs (HTTP
requests even under ``HF_HUB_OFFLINE=1``) or files outside the folder, whose rows are then audited
instead of the folder's. Here a glob is expanded without following links, every file must be regular,
and README ``data_files`` / ``data_dir`` must be relative paths that stay in the folder.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from ..errors import AuditError
from ..facts.tree import MAX_ENTRIES, SKIPPED_DIRS, regular_file
from ..io.jsonfile import MAX_CONFIG_BYTES, check_inside, read_bytes

GLOB_CHARS = "*?["


def regular_data_file(path: Path) -> Path:
    """``path`` when it is (or links to) a regular file: a FIFO named ``train.jsonl`` blocks any reader."""
    return regular_file(path)


def _segment_regex(segment: str) -> str:
    out, i = [], 0
    while i < len(segment):
        ch = segment[i]
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            end = segment.find("]", i + 2)
            if end == -1:
                out.append(re.escape(ch))
            else:
                body = segment[i + 1 : end].replace("\\", "\\\\")
                out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
                i = end
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


def _pattern_regex(relative: str) -> re.Pattern[str]:
    """``glob`` semantics for a relative pattern: ``**`` is any number of folders (none included)."""
    segments = relative.split("/")
    rx = ""
    for i, segment in enumerate(segments):
        last = i == len(segments) - 1
        if segment == "**":
            rx += ".*" if last else "(?:[^/]+/)*"
        else:
            rx += _segment_regex(segment) + ("" if last else "/")
    return re.compile(rx)


def expand_glob(pattern: str) -> list[Path]:
    """Regular files matching ``pattern``, found by walking its fixed leading folder without following
    directory links (each folder visited once, so the work is linear in the tree)."""
    parts = pattern.split("/")
    fixed = next(i for i, p in enumerate(parts) if any(c in p for c in GLOB_CHARS))
    base = Path("/".join(parts[:fixed]) or ".")
    if not base.is_dir():
        return []
    regex = _pattern_regex("/".join(parts[fixed:]))
    out: list[Path] = []
    seen = 0
    for top, dirs, files in os.walk(base, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        seen += len(dirs) + len(files)
        if seen > MAX_ENTRIES:
            raise AuditError(pattern, f"the glob's folder holds over {MAX_ENTRIES:,} entries")
        for name in sorted(files):  # links to folders are listed in dirs: never descended, never data
            path = Path(top) / name
            rel = path.relative_to(base).as_posix()
            if regex.fullmatch(rel):
                if path.is_symlink():
                    check_inside(path, base, "glob's folder")
                out.append(regular_data_file(path))
    return sorted(out)


def _readme_front_matter(folder: Path) -> dict[str, Any]:
    readme = folder / "README.md"
    if not readme.is_file():
        return {}
    text = read_bytes(readme, MAX_CONFIG_BYTES).decode("utf-8", "replace")
    if not text.startswith("---"):
        return {}
    end = text.find("\n---", 3)
    if end == -1:
        return {}
    import yaml  # type: ignore[import-untyped]  # PyYAML ships no type stubs (types-PyYAML is not a dependency)

    try:
        data = yaml.safe_load(text[3:end])
    except yaml.YAMLError as exc:
        raise AuditError(readme, f"has front matter that is not valid YAML: {str(exc).splitlines()[0]}") from None
    return data if isinstance(data, dict) else {}


def _paths(value: Any) -> list[str]:
    """Every path string in a ``data_files`` value (a string, a list, or split -> path(s) mappings)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [p for v in value for p in _paths(v)]
    if isinstance(value, dict):
        return [p for k, v in value.items() if k != "split" for p in _paths(v)]
    return []


def readme_config_names(folder: Path) -> list[str]:
    """The names of the configs a folder's README declares (``configs:`` in its YAML front matter), in order;
    ``load_dataset(folder)`` reads only the default one (or refuses to choose), so a scan opens each."""
    configs = _readme_front_matter(folder).get("configs")
    names = []
    for entry in configs if isinstance(configs, list) else []:
        if isinstance(entry, dict):
            name = entry.get("config_name", "default")
            if isinstance(name, str) and name not in names:
                names.append(name)
    return names


def check_readme_configs(folder: Path) -> None:
    """Refuse README ``configs`` whose ``data_files`` or ``data_dir`` are URLs or leave ``folder``."""
    configs = _readme_front_matter(folder).get("configs")
    readme = folder / "README.md"
    for entry in configs if isinstance(configs, list) else []:
        if not isinstance(entry, dict):
            continue
        for path in [*_paths(entry.get("data_files")), *_paths(entry.get("data_dir"))]:
            if "://" in path or "::" in path or path.startswith(("hf:", "/", "~", "\\")) or ".." in Path(path).parts:
                raise AuditError(readme, f"configs data_files {path[:200]!r} is a URL or leaves the dataset folder")
