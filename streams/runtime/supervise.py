"""Worker jobs beside the verdict path that must never take the worker down.

Faust crashes the whole application when a timer, a crontab job or an ``app.task`` raises: one failed read of
the ``shadows`` table while PostgreSQL restarted stopped the gate (the postgres-outage chaos scenario). Two
wrappers keep such jobs where they belong:

- :func:`contained` for a periodic body (a timer, a crontab job): a failure is logged and the next tick runs
  as usual. A database or broker that is away is a warning of one line; anything else (a bug) is logged with
  its traceback.
- :func:`supervised` for a long-running job (a consumer loop): it is restarted after a pause.

Both return a *nullary* coroutine function. Faust passes the app to a task whose signature has any parameter
(``inspect.signature(fun).parameters``), so a ``functools.partial`` with a defaulted argument left would get
the app in that argument (the pause became the app, and ``asyncio.sleep(app)`` crashed the worker):
``tests/streams/test_supervise.py`` pins that contract on the real ``faust.App``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable

from aiokafka.errors import KafkaError

from streams.store.errors import classify

log = logging.getLogger(__name__)

Job = Callable[[], Awaitable[None]]


def _away(exc: BaseException) -> bool:
    """A failure of a dependency that is away (the database, the broker), not of our code."""
    return isinstance(exc, KafkaError) or classify(exc) == "transient"


def _report(what: str, exc: Exception, then: str) -> None:
    if _away(exc):
        log.warning("%s failed (%s: %s); %s", what, type(exc).__name__, exc, then)
    else:
        log.exception("%s failed; %s", what, then)


def contained(what: str) -> Callable[[Job], Job]:
    """Decorate a periodic body so that a failure is logged and never propagates (the next tick runs)."""

    def decorate(body: Job) -> Job:
        @functools.wraps(body)
        async def run() -> None:
            try:
                await body()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # beside the verdict path: logged, never fatal
                _report(what, exc, "trying again at the next tick")

        return run

    return decorate


def supervised(job: Job, what: str, pause_s: float = 5.0) -> Job:
    """A nullary coroutine function that runs ``job`` until it returns; after a failure (logged) it waits
    ``pause_s`` and starts ``job`` again."""

    async def run() -> None:
        while True:
            try:
                await job()
                return
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # beside the verdict path: logged, restarted
                _report(what, exc, f"restarting in {pause_s:.0f} s")
            await asyncio.sleep(pause_s)

    run.__name__ = run.__qualname__ = what.replace(" ", "_")
    return run
