"""Generated folder trees of files, folders, links (inside, outside, dangling, loops) and FIFOs.

``check_tree`` accepts a tree exactly when nothing below it is a FIFO or a link that leaves it or dangles;
``copy_tree`` (--fix) then copies only regular files; ``expand_glob`` never follows a folder link, so
self-links cost nothing, and every path it returns is a regular file inside the glob's folder.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hf_vocab_audit.dataset.folder_guard import expand_glob
from hf_vocab_audit.errors import AuditError
from hf_vocab_audit.facts.tree import check_tree
from hf_vocab_audit.fix.surgical import copy_tree

KINDS = ("file", "dir", "link_in_file", "link_in_dir", "link_parent", "link_self", "link_out", "link_dangling",
         "link_dev", "fifo")
entries = st.lists(st.tuples(st.integers(0, 5), st.sampled_from(KINDS)), min_size=1, max_size=14)


def _build(root: Path, outside: Path, spec: list[tuple[int, str]]) -> bool:
    """Build the tree; True when it holds something check_tree must refuse."""
    folders, files, bad = [root], [], False
    (outside / "secret.jsonl").write_text("{}\n")
    for i, (parent, kind) in enumerate(spec):
        where = folders[parent % len(folders)] / f"e{i}.jsonl"
        if kind == "file":
            where.write_text('{"input_ids": [1]}\n')
            files.append(where)
        elif kind == "dir":
            where = where.with_suffix("")
            where.mkdir()
            folders.append(where)
        elif kind == "link_in_file" and files:
            where.symlink_to(os.path.relpath(files[-1], where.parent))
        elif kind == "link_in_dir":
            where.symlink_to(os.path.relpath(folders[-1], where.parent))
        elif kind == "link_parent":
            where.symlink_to("..") if where.parent != root else where.symlink_to(".")
        elif kind == "link_self":
            where.symlink_to(".")
        elif kind == "link_out":
            where.symlink_to(outside / "secret.jsonl")
            bad = True
        elif kind == "link_dangling":
            where.symlink_to(root / "missing")
            bad = True
        elif kind == "link_dev":
            where.symlink_to("/dev/null")
            bad = True
        elif kind == "fifo":
            os.mkfifo(where)
            bad = True
    return bad


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(entries)
def test_check_tree_refuses_exactly_the_hostile_trees(spec):
    with tempfile.TemporaryDirectory() as tmp:
        root, outside = Path(tmp) / "root", Path(tmp) / "outside"
        root.mkdir()
        outside.mkdir()
        bad = _build(root, outside, spec)
        try:
            check_tree(root)
            refused = None
        except AuditError as exc:
            refused = str(exc)
        assert (refused is not None) == bad, (spec, refused)
        if refused:
            assert "\n" not in refused and str(root) in refused
            return
        copy_tree(root, Path(tmp) / "copy", set())  # --fix's copy of an accepted tree
        for path in (Path(tmp) / "copy").rglob("*"):
            assert not path.is_symlink() and (path.is_dir() or path.is_file())
        found = expand_glob(f"{root}/**/*.jsonl")
        for path in found:
            assert path.is_file() and str(path.resolve()).startswith(str(root.resolve()))
            assert not any(p.is_symlink() for p in path.relative_to(root).parents if str(p) != "." and
                           (root / p).is_symlink())  # never reached through a folder link
