"""The package's layers import one way, and no module imports another in a loop (docs/architecture.md).

Imports are read with ``ast`` (module level and inside functions, ``TYPE_CHECKING`` blocks included), so a
lazy import cannot hide an upward dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "hf_vocab_audit"
ROOT = "hf_vocab_audit"

# Lowest first. A unit may import units of lower rank only; units of equal rank may not import each other.
RANK = {
    "errors": 0, "version": 0,
    "core": 1,
    "io": 2,
    "facts": 3,
    "weights": 4, "dataset": 4,
    "rules": 5,
    "audit": 6,
    "fix": 7,
    "settings": 8,
    "formats": 9, "gate": 9,
    "guard": 10, "precommit": 10,
    "repro": 11,
    "demo": 12,
    "cli": 13,
    "__main__": 14, "": 14,  # "": the package's own __init__ (the public API)
}  # fmt: skip


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path) -> set[str]:
    """The package modules ``path`` imports (a ``from pkg import submodule`` names the submodule)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == ROOT}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != ROOT:
                continue
            submodules = {f"{target}.{a.name}" for a in node.names if _exists(f"{target}.{a.name}")}
            if submodules and len(submodules) == len(node.names):
                out |= submodules
            else:
                out.add(target)
                out |= submodules
    out.discard(name)
    return out


def _exists(module: str) -> bool:
    rel = Path(*module.split(".")[1:])
    return (PACKAGE / rel).with_suffix(".py").is_file() or (PACKAGE / rel / "__init__.py").is_file()


def unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def graph() -> dict[str, set[str]]:
    return {module_name(p): imports(p) for p in sorted(PACKAGE.rglob("*.py"))}


def test_every_unit_has_a_layer():
    assert {unit(m) for m in graph()} <= set(RANK), "add the new package or module to RANK and docs/architecture.md"


def test_nothing_imports_upward_or_sideways():
    bad = []
    for module, targets in graph().items():
        for target in targets:
            a, b = unit(module), unit(target)
            if a != b and RANK[b] >= RANK[a]:
                bad.append(f"{module} -> {target} ({a} rank {RANK[a]}, {b} rank {RANK[b]})")
    assert not bad, "\n".join(sorted(bad))


def test_no_import_cycles():
    g = graph()
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(g.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = 2

    for node in sorted(g):
        if node not in state:
            visit(node, [])
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)


def test_the_checker_sees_a_cycle_and_an_upward_import(tmp_path, monkeypatch):
    """The walker itself: a planted upward import and a planted loop are reported."""
    pkg = tmp_path / ROOT
    (pkg / "core").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "core" / "__init__.py").write_text("")
    (pkg / "core" / "a.py").write_text("from ..audit import x\nfrom . import b\n")
    (pkg / "core" / "b.py").write_text("def f():\n    from .a import y\n")
    (pkg / "audit.py").write_text("")
    monkeypatch.setattr(__import__(__name__), "PACKAGE", pkg)
    g = graph()
    assert g["hf_vocab_audit.core.a"] == {"hf_vocab_audit.audit", "hf_vocab_audit.core.b"}
    assert g["hf_vocab_audit.core.b"] == {"hf_vocab_audit.core.a"}
    try:
        test_nothing_imports_upward_or_sideways()
    except AssertionError as exc:
        assert "core.a -> hf_vocab_audit.audit" in str(exc)
    else:
        raise AssertionError("the upward import was not reported")
    try:
        test_no_import_cycles()
    except AssertionError as exc:
        assert "core.a -> hf_vocab_audit.core.b -> hf_vocab_audit.core.a" in str(exc)
    else:
        raise AssertionError("the cycle was not reported")


def test_a_plain_audit_imports_no_numpy_weights_or_arrow():
    """Even with every rule module loaded, the weights and dataset engines stay unimported."""
    import subprocess
    import sys

    code = ("import sys; from hf_vocab_audit.rules import all_rules; import hf_vocab_audit.audit; all_rules(); "
            "print(sorted(m for m in ('numpy', 'pyarrow', 'torch', 'hf_vocab_audit.weights.analysis') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# ---- fixes are dispatched by type, never by name (docs/architecture.md, "Where a new fix edit goes") ----

FIX_SERIALISATION = "hf_vocab_audit.core.fixes"  # the one module that reads an edit's kind: JSON -> edits


def _fix_names() -> set[str]:
    from hf_vocab_audit.core.fixes import EDIT_KINDS

    return set(EDIT_KINDS)


def _strings(node: ast.AST) -> set[str]:
    """The string constants ``node`` is, or holds (a tuple, list or set of them)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return {s for elt in node.elts for s in _strings(elt)}
    return set()


def _named(node: ast.AST, names: tuple[str, ...]) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr in names) or (isinstance(node, ast.Name) and node.id in names)


def fix_string_dispatch(source: str) -> list[int]:
    """Lines where ``source`` compares a fix's action or an edit's kind with a string (``action ==``,
    ``.action in (...)``, ``kind == "grow-embeddings"``, ``match edit.kind: case "..."``)."""
    kinds = _fix_names()
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            strings = set().union(*(_strings(s) for s in sides))
            if strings and any(_named(s, ("action",)) for s in sides):
                lines.append(node.lineno)
            elif strings & kinds and any(_named(s, ("kind",)) for s in sides):
                lines.append(node.lineno)
        elif isinstance(node, ast.Match) and _named(node.subject, ("action", "kind")):
            values = {c.pattern.value.value for c in node.cases if isinstance(c.pattern, ast.MatchValue)
                      and isinstance(c.pattern.value, ast.Constant)}
            if values:
                lines.append(node.lineno)
    return lines


def test_no_module_dispatches_on_fix_action_strings():
    found = {module_name(p): fix_string_dispatch(p.read_text(encoding="utf-8")) for p in sorted(PACKAGE.rglob("*.py"))
             if module_name(p) != FIX_SERIALISATION}
    assert not {m: lines for m, lines in found.items() if lines}


def test_the_dispatch_checker_sees_string_dispatch():
    assert fix_string_dispatch('if f.fix.action == "grow-embeddings":\n    pass\n') == [1]
    assert fix_string_dispatch('ok = action in ("set-pad-token", "x")\n') == [1]
    assert fix_string_dispatch('ok = edit.kind != "suppress-tokens"\n') == [1]
    assert fix_string_dispatch('match edit.kind:\n    case "grow-bias":\n        pass\n') == [1]
    assert fix_string_dispatch('ok = p.kind == "image"\n') == []  # a placeholder's kind, not a fix's
    assert fix_string_dispatch("ok = isinstance(edit, GrowRows)\n") == []


# ---- sources, weight formats and targets are dispatched by type, never by name (docs/architecture.md) ----

# What holds a source's, a weight format's or a target's name: a string compared with one of these is dispatch.
ROUTE_SUBJECTS = ("name", "format", "fmt", "weights_format", "target", "target_kind", "origin", "method", "route")


def _route_names() -> set[str]:
    """Every facts source's ``name``, every weight format's ``name``, every ``--target`` kind, every origin,
    every ``--fix`` route (``--method``)."""
    from hf_vocab_audit.core.options import Method, TargetKind
    from hf_vocab_audit.core.source import Source
    from hf_vocab_audit.facts.sources import FactsSource
    from hf_vocab_audit.facts.sources.registry import SOURCES
    from hf_vocab_audit.facts.weight_formats.registry import WEIGHT_FORMATS

    sources: set[type[FactsSource]] = set(SOURCES)
    sources |= {sub for cls in SOURCES for sub in cls.__subclasses__()}
    return ({c.name for c in sources} | {f.name for f in WEIGHT_FORMATS} | {k.value for k in TargetKind}
            | {s.value for s in Source} | {m.value for m in Method})


def _source_classes() -> set[str]:
    from hf_vocab_audit.facts.sources.registry import SOURCES

    return {c.__name__ for c in SOURCES} | {sub.__name__ for c in SOURCES for sub in c.__subclasses__()}


def route_string_dispatch(source: str, names: set[str] | None = None) -> list[int]:
    """Lines where ``source`` compares a source's, a weight format's or a target's name with a string
    (``tensors.format == "safetensors"``, ``options.target_kind == "vllm"``, ``source.name in ("gguf",)``,
    ``match t.target: case "gguf"``). The pipeline asks the source, the format or the target what it can do."""
    names = _route_names() if names is None else names
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            strings = set().union(*(_strings(s) for s in sides))
            if strings & names and any(_named(s, ROUTE_SUBJECTS) for s in sides):
                lines.append(node.lineno)
        elif isinstance(node, ast.Match) and _named(node.subject, ROUTE_SUBJECTS):
            values = {c.pattern.value.value for c in node.cases if isinstance(c.pattern, ast.MatchValue)
                      and isinstance(c.pattern.value, ast.Constant)}
            if values & names:
                lines.append(node.lineno)
    return lines


def source_type_dispatch(source: str, classes: set[str] | None = None) -> list[int]:
    """Lines where ``source`` asks which facts source it holds (``isinstance(source, AdapterSource)``): the
    source declares what the pipeline needs instead (``FactsSource.scopes``, ``cannot``, ``repair``...)."""
    classes = _source_classes() if classes is None else classes
    lines = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("isinstance", "issubclass")
                and len(node.args) == 2):
            kinds = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
            if any(_named(k, tuple(classes)) for k in kinds):
                lines.append(node.lineno)
    return lines


def test_no_module_dispatches_on_source_format_target_or_route_names():
    found = {module_name(p): route_string_dispatch(p.read_text(encoding="utf-8")) for p in sorted(PACKAGE.rglob("*.py"))}
    assert not {m: lines for m, lines in found.items() if lines}


def test_no_module_outside_the_sources_asks_which_source_it_holds():
    found = {module_name(p): source_type_dispatch(p.read_text(encoding="utf-8")) for p in sorted(PACKAGE.rglob("*.py"))
             if not module_name(p).startswith(f"{ROOT}.facts.sources")}
    assert not {m: lines for m, lines in found.items() if lines}


def test_the_route_checker_sees_name_dispatch():
    assert route_string_dispatch('if tensors.format != "safetensors":\n    pass\n') == [1]
    assert route_string_dispatch('ok = options.target_kind == "vllm"\n') == [1]
    assert route_string_dispatch('ok = source.name in ("gguf", "hub")\n') == [1]
    assert route_string_dispatch('ok = "bin" == fmt\n') == [1]
    assert route_string_dispatch('match t.target:\n    case "gguf":\n        pass\n') == [1]
    assert route_string_dispatch('if method == "surgical":\n    pass\n') == [1]  # --fix routes are objects
    assert route_string_dispatch('ok = options.route != "transformers"\n') == [1]
    assert route_string_dispatch('ok = resolved.kind == "folder"\n') == []  # a dataset SPEC's kind, not a source
    assert route_string_dispatch('ok = path.suffix == ".gguf"\n') == []
    assert route_string_dispatch("ok = t.target is TargetKind.GGUF\n") == []
    assert route_string_dispatch("ok = format_of(tensors).byte_ranges\n") == []
    assert source_type_dispatch("if isinstance(source, AdapterSource):\n    pass\n") == [1]
    assert source_type_dispatch("ok = isinstance(s, (FolderSource, hub.HubSource))\n") == [1]
    assert source_type_dispatch("ok = isinstance(s, Path)\n") == []
    assert source_type_dispatch("ok = source.repair is Repair.EXPLAIN\n") == []
