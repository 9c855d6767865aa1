"""Where a worker's graceful stop goes, phase by phase, said in one log line when it ends.

A rolling deploy waits for a stopping worker: its partitions move only once its consumer has left the group. The
phases, each ending at a mark: ``tables`` (from the signal until Faust's fetcher and the tables have stopped:
the gate fetches no more drafts), ``agents`` (Faust's agents and producer buffer, until the gate's consumer
begins to stop), ``group leave`` (until that consumer has left its group, or let its session run out as a leader
must on the embedded broker) and ``rest`` (the web server, the consumers beside the verdict path, the producers
and the database, until the process is done). The line reads ``worker stopped in T s: tables …``; an operator
reads it to see why a stop is slow (a last checkpoint round per table once made ``tables`` 1.4 s:
BENCHMARKS.md, "A stop's leave came later").

The app holds the clock (``stop_clock``); the runtime's hooks mark it with :func:`mark_stop`.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Mapping
from typing import Any

#: The log line's first words (followed by the total and the phases).
PREFIX = "worker stopped in"
PHASES = ("tables", "agents", "group leave", "rest")


class StopClock:
    """Marks the start of a stop and the end of each phase (the first time only), and reports them."""

    def __init__(self) -> None:
        self.began: float | None = None
        self.marks: dict[str, float] = {}

    def begin(self) -> None:
        """The stop began (the first signal, or the app's stop if no signal came first)."""
        if self.began is None:
            self.began = time.monotonic()

    def mark(self, phase: str) -> None:
        if self.began is not None:
            self.marks.setdefault(phase, time.monotonic())

    def phases(self) -> dict[str, float]:
        """Seconds per phase, in order; a phase with no mark is folded into the next one marked."""
        return {} if self.began is None else phase_seconds(self.began, self.marks, PHASES)

    def summary(self) -> str:
        phases = self.phases()
        listed = ", ".join(f"{name} {s:.2f} s" for name, s in phases.items())
        return f"{PREFIX} {sum(phases.values()):.2f} s: {listed}"

    def report(self) -> None:
        """Mark ``rest`` and print the line (to stderr, as the start-up's), if a stop began."""
        if self.began is not None:
            self.mark("rest")
            print(f"drift: {self.summary()}", file=sys.stderr, flush=True)


def phase_seconds(start: float, marks: Mapping[str, float], order: Iterable[str]) -> dict[str, float]:
    """Seconds per phase of ``order`` from ``start``, each ending at its mark; a phase with no mark is folded into
    the next one marked (the start-up's line uses it too: :mod:`streams.worker.startup`)."""
    out: dict[str, float] = {}
    previous = start
    for phase in order:
        if phase in marks:
            out[phase] = marks[phase] - previous
            previous = marks[phase]
    return out


#: The phases a rolling deploy waits for: until the gate's consumer has left its group.
UNTIL_LEFT = PHASES[: PHASES.index("group leave") + 1]


def begin_stop(app: Any) -> None:
    """The stop of ``app`` began, if it has a stop clock (a worker's app; not a test's or a tool's)."""
    if (clock := _clock(app)) is not None:
        clock.begin()


def mark_stop(app: Any, phase: str) -> None:
    """Mark ``phase`` on ``app``'s stop clock, if it has one."""
    if (clock := _clock(app)) is not None:
        clock.mark(phase)


def _clock(app: Any) -> StopClock | None:
    clock = getattr(app, "stop_clock", None)
    return clock if isinstance(clock, StopClock) else None
