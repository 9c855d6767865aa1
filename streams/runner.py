"""Run a gate worker in this process (used by ``drift worker`` and ``drift up``)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import faust

from engine.judges.base import Judge
from engine.settings import Settings
from streams.app import build_app


def _new_loop() -> asyncio.AbstractEventLoop:
    """uvloop where available (Linux, macOS): its faster socket and callback handling matter here."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def run_worker(
    settings: Settings,
    judge: Judge,
    *,
    partitions: int = 3,
    on_ready: Callable[[], None] | None = None,
    loglevel: str = "WARNING",
) -> None:
    """Block until SIGINT/SIGTERM. ``on_ready`` is called once partitions are assigned and the store is up."""
    loop = _new_loop()
    asyncio.set_event_loop(loop)
    app, runtime = build_app(settings, judge, partitions=partitions)
    runtime.on_ready = on_ready
    worker = faust.Worker(app, loglevel=loglevel, quiet=True, loop=loop, redirect_stdouts=False)
    worker.spinner = None  # its cursor escapes would garble the 'ready' line and piped output
    logging.getLogger("faust").setLevel(loglevel)
    try:
        worker.execute_from_commandline()
    except SystemExit as exc:
        if exc.code not in (0, None):
            raise
