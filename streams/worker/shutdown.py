"""Ctrl-C for the long-running commands (``up``, ``demo``, ``worker``, ``sinks``).

A terminal sends SIGINT to its whole foreground process group, so the embedded children (Tansu, PostgreSQL,
worker subprocesses) run in sessions of their own (see :mod:`streams.embedded`) and only ``drift`` gets it.
``drift`` then shuts down in order: it stops consuming, flushes and commits, stops the worker, then the broker,
then the database. A second SIGINT (or SIGTERM) while that runs kills the children at once and exits with 130.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

#: Exit status after a second interrupt (128 + SIGINT, as a shell reports it).
ABORTED = 130


def abort(kill: Callable[[], None]) -> None:
    """Kill the children with ``kill`` (errors ignored) and leave at once, skipping every cleanup."""
    with contextlib.suppress(BaseException):
        kill()
    with contextlib.suppress(BaseException):
        sys.stderr.write("\ndrift: interrupted again: stopped at once\n")
        sys.stderr.flush()
    os._exit(ABORTED)


def abort_on_signal(kill: Callable[[], None]) -> dict[int, Any]:
    """From now on SIGINT/SIGTERM call :func:`abort` with ``kill``, in the main thread, at once: not through an
    event loop, which an orderly stop can block (Faust waits for its consumer thread to stop); returns the
    handlers they had."""

    def handler(signum: int, frame: FrameType | None) -> None:
        abort(kill)

    return {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}


@contextlib.contextmanager
def interrupts_abort(kill: Callable[[], None]) -> Iterator[None]:
    """While the block runs (an orderly shutdown), SIGINT/SIGTERM call :func:`abort` with ``kill``."""
    previous = abort_on_signal(kill)
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def kill_all(*kills: Callable[[], None]) -> Callable[[], None]:
    """One callable that runs every ``kill`` in turn, whatever each one raises."""

    def run() -> None:
        for kill in kills:
            with contextlib.suppress(BaseException):
                kill()

    return run
