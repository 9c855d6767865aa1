"""Where a worker's start-up goes, phase by phase, said in one log line once it is ready.

The phases, each ending at a mark: ``cli imports`` (process start until the ``drift worker`` command runs: the
interpreter and the CLI's imports), ``checks`` (the propositions validated, the database and the broker reached,
topics created), ``faust imports`` (Faust, aiokafka and the worker's modules), ``build`` (the app and its
services wired),
``faust start`` (Faust's services up until the consumer asks to join its group), ``group join`` (until the
group assigned partitions), ``restore`` (the tables' restores, until Faust's rebalance is complete) and
``store`` (the database pool and the agent configurations, until ``ready``). The benchmark of hand-overs
(:mod:`ops.bench.handover`) reads the line; an operator reads it to see why a start is slow.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import Any

from streams.runtime.stopping import phase_seconds

#: The log line's first words (followed by the total and the phases).
PREFIX = "worker started in"
PHASES = ("cli imports", "checks", "faust imports", "build", "faust start", "group join", "restore", "store")


def process_started() -> float:
    """This process's start on the ``time.monotonic`` clock (Linux: from /proc; elsewhere: now)."""
    try:
        with open("/proc/self/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        ticks = int(fields[19])  # field 22 of proc(5), counted after the command name
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
        return time.monotonic() - max(age, 0.0)
    except (OSError, ValueError, IndexError, AttributeError):
        return time.monotonic()


class StartupClock:
    """Marks the end of each phase (the first time only) and reports them."""

    def __init__(self, started: float | None = None) -> None:
        self.started = process_started() if started is None else started
        self.marks: dict[str, float] = {}

    def mark(self, phase: str) -> None:
        self.marks.setdefault(phase, time.monotonic())

    def phases(self) -> dict[str, float]:
        """Seconds per phase, in order; a phase with no mark is folded into the next one marked."""
        return phase_seconds(self.started, self.marks, PHASES)

    def summary(self) -> str:
        """``worker started in T s: phase s, …; cpu C s`` (C: this process's CPU time so far — what the start
        costs on an idle host, whatever the load when it was measured)."""
        phases = self.phases()
        total = sum(phases.values())
        listed = ", ".join(f"{name} {s:.2f} s" for name, s in phases.items())
        return f"{PREFIX} {total:.2f} s: {listed}; cpu {time.process_time():.2f} s"

    def on_ready(self, callback: Callable[[], None] | None) -> Callable[[], None]:
        """``callback`` preceded by the ``store`` mark and the summary line."""

        def ready() -> None:
            self.mark("store")
            print(f"drift: {self.summary()}", file=sys.stderr, flush=True)
            if callback is not None:
                callback()

        return ready

    def install(self, app: Any) -> None:
        """Mark the group phases from Faust's rebalance signals (the first of each)."""

        async def revoked(sender: Any, *args: Any, **kwargs: Any) -> None:
            self.mark("faust start")

        async def assigned(sender: Any, *args: Any, **kwargs: Any) -> None:
            self.mark("group join")

        async def complete(sender: Any, *args: Any, **kwargs: Any) -> None:
            self.mark("restore")

        app.on_partitions_revoked.connect(revoked)
        app.on_partitions_assigned.connect(assigned)
        app.on_rebalance_complete.connect(complete)
