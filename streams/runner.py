"""Run a gate worker in this process (used by ``drift worker`` and ``drift up``)."""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import Callable

import faust

from engine.judges.base import Judge
from engine.redaction import install_log_masking
from engine.settings import Settings
from streams.app import build_app


def _new_loop() -> asyncio.AbstractEventLoop:
    """uvloop where available (Linux, macOS): its faster socket and callback handling matter here."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


GC_GEN0_THRESHOLD = 50_000


def _tune_gc() -> None:
    """Freeze the start-up heap (Faust, the Kafka clients, pydantic models: never garbage) so full collections
    stop walking it, and collect the young generation less often: the hot path allocates many short-lived
    objects that reference counting frees anyway. Measured side by side: ~14% more algorithmic drafts/s."""
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(GC_GEN0_THRESHOLD, middle, old)


def run_worker(
    settings: Settings,
    judge: Judge,
    *,
    partitions: int = 3,
    on_ready: Callable[[], None] | None = None,
    loglevel: str = "WARNING",
) -> None:
    """Block until SIGINT/SIGTERM. ``on_ready`` is called once partitions are assigned and the store is up."""
    install_log_masking([settings.database(), settings.broker])
    loop = _new_loop()
    asyncio.set_event_loop(loop)
    app, runtime = build_app(settings, judge, partitions=partitions)
    runtime.on_ready = on_ready
    worker = faust.Worker(app, loglevel=loglevel, quiet=True, loop=loop, redirect_stdouts=False)
    worker.spinner = None  # its cursor escapes would garble the 'ready' line and piped output
    _tune_gc()
    logging.getLogger("faust").setLevel(loglevel)
    try:
        worker.execute_from_commandline()
    except SystemExit as exc:
        if exc.code not in (0, None):
            raise
