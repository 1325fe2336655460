"""Measure the hostile-input catalogue (tests/malformed.py): how many inputs, how each was handled, the
slowest case and the peak memory. Prints the table for docs/robustness.md.

    python benchmarks/robustness.py            # every case in one limited child (as the tests do)
    python benchmarks/robustness.py --separate # every case in its own `python -m hf_vocab_audit` process
    python benchmarks/robustness.py --separate --group "hub client" --group "gguf work"   # some groups only
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent.parent), str(Path(__file__).resolve().parent.parent / "tests")]

from malformed import CASES, MEMORY_LIMIT, TIME_LIMIT, hub_env, run_batch, run_cli, serve_hub_cases  # noqa: E402


def handled(case, outcome) -> str:
    lines = outcome.stderr.splitlines()
    if outcome.exit_code not in case.exit_codes:
        return "unhandled"
    if outcome.exit_code == 2:
        one_line = len(lines) == 1 and "unexpected" not in lines[0]
        named = case.names is None or (bool(lines) and case.names in lines[0])
        named = named and (case.says is None or (bool(lines) and case.says in lines[0]))  # the fix it names
        return "refused" if one_line and named else "unhandled"
    return "audited"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--separate", action="store_true", help="one process per case (slower, per-case RSS)")
    parser.add_argument("--group", action="append", help="only the cases of this group (repeatable)")
    args = parser.parse_args()
    cases = [c for c in CASES if args.group is None or c.group in args.group]
    unknown = set(args.group or ()) - {c.group for c in CASES}
    if unknown:
        parser.error(f"unknown group(s): {', '.join(sorted(unknown))}")
    with tempfile.TemporaryDirectory() as tmp:
        items = []
        for c in cases:
            root = Path(tmp) / c.name
            root.mkdir()
            items.append((c.name, c.build(root / "ckpt")))
        hub = {c.name for c in cases if c.hub}
        local = [(n, a) for n, a in items if n not in hub]
        remote = [(n, a) for n, a in items if n in hub]
        with serve_hub_cases() as server:  # the Hub cases audit a loopback Hub (tests/hub_server.py)
            env = hub_env(server.url, Path(tmp) / "hf-home")
            if args.separate:
                outcomes = {name: run_cli(a) for name, a in local}
                outcomes.update({name: run_cli(a, env={**os.environ, **env}) for name, a in remote})
            else:
                outcomes = run_batch(local)
                outcomes.update(run_batch(remote, env=env))
        pwned = sorted(p.parent.name for p in Path(tmp).rglob("PWNED"))
    rows: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for c in cases:
        o = outcomes[c.name]
        r = rows[c.group]
        r["inputs"] += 1
        r[handled(c, o)] += 1
        r["slowest"] = max(r["slowest"], o.seconds)
        r["rss"] = max(r["rss"], o.max_rss_mb)
        if handled(c, o) == "unhandled":
            print(f"UNHANDLED {c.name}: exit {o.exit_code} {o.stderr.strip()[:300]}", file=sys.stderr)
    mode = "one process per case" if args.separate else "one child process for all cases"
    print(f"Limits: RLIMIT_AS {MEMORY_LIMIT // 2**30} GiB, {TIME_LIMIT:.0f} s per case; {mode}.\n")
    print("| input group | inputs | refused: exit 2, one line naming the file | audited: exit 0/1 | unhandled "
          "| slowest case (s) | peak RSS (MB) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    total: dict[str, float] = defaultdict(float)
    for group, r in rows.items():
        print(f"| {group} | {r['inputs']:.0f} | {r['refused']:.0f} | {r['audited']:.0f} | {r['unhandled']:.0f} "
              f"| {r['slowest']:.1f} | {r['rss']:.0f} |")
        for k in ("inputs", "refused", "audited", "unhandled"):
            total[k] += r[k]
        total["slowest"] = max(total["slowest"], r["slowest"])
        total["rss"] = max(total["rss"], r["rss"])
    print(f"| **all** | {total['inputs']:.0f} | {total['refused']:.0f} | {total['audited']:.0f} "
          f"| {total['unhandled']:.0f} | {total['slowest']:.1f} | {total['rss']:.0f} |")
    print(f"\ncode executed (marker files created): {len(pwned)} {pwned if pwned else ''}")


if __name__ == "__main__":
    main()
