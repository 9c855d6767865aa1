"""The algorithmic gate of two trees side by side: this checkout and another (``--base``, e.g. a ``git worktree``
of the commit before a change), alternating on one embedded stack, with the raw passthrough and the bare Faust
agent in every round. The other tree's worker runs from its own directory (``python -m streams.cli`` resolves
the package from there), with this checkout's virtual environment.

``python -m ops.bench.gate_ab --base ../base [--rounds 2] [--drafts 10000]``; prints every round and the medians
of the paired ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from ops.bench import gate
from streams.embedded import EmbeddedStack, start_stack


@contextlib.contextmanager
def _in(directory: Path | None) -> Iterator[None]:
    """Start child processes (the worker) from ``directory``."""
    if directory is None:
        yield
        return
    here = Path.cwd()
    os.chdir(directory)
    try:
        yield
    finally:
        os.chdir(here)


async def _rounds(stack: EmbeddedStack, base: Path, rounds: int, drafts: int) -> dict[str, list[float]]:
    found: dict[str, list[float]] = {"passthrough": [], "gate": [], "base_gate": [], "floor": []}
    for n in range(rounds):
        found["passthrough"].append(await gate.passthrough(stack.broker.bootstrap))
        for key, tree in (("gate", None), ("base_gate", base)):
            with _in(tree):
                rate = await gate.gate_algorithmic(stack, drafts, round_no=n + (100 if tree else 0))
            found[key].append(rate["gate_algorithmic_drafts_per_s"])
        found["floor"].append(await gate.faust_floor(stack, drafts, round_no=n))
        print(f"round {n + 1}: " + ", ".join(f"{k} {v[-1]:,.0f}/s" for k, v in found.items()), flush=True)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--drafts", type=int, default=10_000)
    args = parser.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    stack = start_stack()
    try:
        found = asyncio.run(_rounds(stack, args.base.resolve(), args.rounds, args.drafts))
    finally:
        stack.stop()
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    for name in ("gate", "base_gate"):
        for against in ("passthrough", "floor"):
            ratio = np.median([a / b for a, b in zip(found[name], found[against], strict=True)])
            print(f"{name} / {against}: {ratio:.3f}")


if __name__ == "__main__":
    main()
