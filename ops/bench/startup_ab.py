"""A worker's start-up, two trees side by side: this checkout and another (``--base``, e.g. a ``git worktree`` of
the commit before a change), started in turn on one fresh embedded stack, each start read from its
``worker started in`` line (:mod:`streams.worker.startup`). The order alternates every round, and every start
is stopped before the next one, so each finds the same stack and group. The other tree's worker runs from its
own directory with this checkout's virtual environment (as in :mod:`ops.bench.gate_ab`).

``python -m ops.bench.startup_ab --base ../base [--starts 8]``; prints every start and the medians per tree.
"""

from __future__ import annotations

import argparse
import os
import statistics
from pathlib import Path

from engine.settings import Settings
from ops.bench.gate import _worker
from ops.bench.gate_ab import _in
from ops.bench.handover import startup_phases
from streams.embedded import EmbeddedStack, start_stack

#: The phases before the worker asks to join its group: what the process itself spends.
OWN = ("cli imports", "checks", "faust imports", "build", "faust start")
SHOWN = ("total", "cpu", "before join", *OWN, "group join", "restore", "store")


def one_start(stack: EmbeddedStack, tree: Path | None, label: str) -> dict[str, float]:
    """Start one offline-judge worker from ``tree`` (None: this checkout), wait for ready, stop it; its phases."""
    settings = Settings(broker=stack.broker.bootstrap, database_url=stack.database.url, topic_prefix="startup.")
    with _in(tree):
        worker = _worker(stack, settings, "offline")
        worker.log_path = stack.root / f"worker-{label}.log"
        worker.start(60)
    worker.stop()
    phases = startup_phases(worker)
    if not phases:
        raise SystemExit(f"{label}: no 'worker started in' line in {worker.log_path}")
    phases["before join"] = sum(phases.get(name, 0.0) for name in OWN)
    return phases


def run(stack: EmbeddedStack, base: Path, starts: int) -> dict[str, list[dict[str, float]]]:
    found: dict[str, list[dict[str, float]]] = {"this": [], "base": []}
    for n in range(starts):
        order = [("this", None), ("base", base)]
        for name, tree in order if n % 2 == 0 else order[::-1]:
            phases = one_start(stack, tree, f"{name}-{n}")
            found[name].append(phases)
            print(f"start {n + 1} {name}: " + ", ".join(f"{k} {phases.get(k, 0.0):.2f}" for k in SHOWN), flush=True)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True)
    parser.add_argument("--starts", type=int, default=8, help="starts of each tree (default 8)")
    args = parser.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    stack = start_stack()
    try:
        found = run(stack, args.base.resolve(), args.starts)
    finally:
        stack.stop()
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    for name, starts in found.items():
        medians = {k: statistics.median(s.get(k, 0.0) for s in starts) for k in SHOWN}
        print(f"{name} (medians of {len(starts)}): " + ", ".join(f"{k} {v:.2f} s" for k, v in medians.items()))


if __name__ == "__main__":
    main()
