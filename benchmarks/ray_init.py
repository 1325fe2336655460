"""What a local Ray instance costs to start, with the options ``--engine ray`` passes and with variants.

    python benchmarks/ray_init.py [--rounds 2]

Each run is a fresh process: ``import ray``, ``ray.init`` (2 CPUs, no dashboard, no log forwarding, as
``dataset.ray_engine.ray_session`` starts one), one trivial task (a worker started and reached), and
``ray.shutdown``. Variants, interleaved with the default in each round: a small object store (78 MB,
Ray's minimum) and the loopback address as the node's IP (no interface lookup). The target of issue 28 is
a start-up of at most 3 s; the load average is printed, as on a shared machine it dominates.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import subprocess
import sys
import time

VARIANTS = {
    "as --engine ray": {},
    "object store 78 MB + node 127.0.0.1": {"object_store_memory": 78 * 1024 * 1024, "_node_ip_address": "127.0.0.1"},
}


def child(name: str) -> None:
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    start = time.perf_counter()
    import ray

    imported = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR,
             configure_logging=True, **VARIANTS[name])
    started = time.perf_counter()

    @ray.remote
    def one() -> int:
        return 1

    ray.get(one.remote())
    first = time.perf_counter()
    ray.shutdown()
    print(json.dumps({"import": imported - start, "init": started - imported, "first_task": first - started,
                      "shutdown": time.perf_counter() - first}))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--child")
    args = ap.parse_args()
    if args.child:
        child(args.child)
        return
    load = os.getloadavg()[0]
    got: dict[str, list[dict[str, float]]] = {name: [] for name in VARIANTS}
    for _ in range(args.rounds):
        for name in VARIANTS:
            out = subprocess.run([sys.executable, __file__, "--child", name], check=True, capture_output=True, text=True)
            got[name].append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"CPUs {os.cpu_count()}, load average {load:.1f} before, {os.getloadavg()[0]:.1f} after; "
          f"median of {args.rounds} rounds")
    for name, runs in got.items():
        parts = {k: statistics.median(r[k] for r in runs) for k in ("import", "init", "first_task", "shutdown")}
        print(f"{name:<38} import ray {parts['import']:.1f} s, ray.init {parts['init']:.1f} s, first task "
              f"{parts['first_task']:.1f} s (start-up {parts['init'] + parts['first_task']:.1f} s; target <= 3 s), "
              f"shutdown {parts['shutdown']:.1f} s")


if __name__ == "__main__":
    main()
