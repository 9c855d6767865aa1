"""One retry policy for every retrying loop, on tenacity: jittered exponential backoff, a server's
``retry-after`` honoured, an attempt cap and a deadline, and every retry counted.

The wait before retry ``n`` is drawn uniformly from ``[c/2, c]`` with ``c = min(max_s, base_s · 2^(n-1))``:
the jitter spreads the retries of many workers after a shared outage (no herd), and at least half the
backoff is kept. A failure carrying ``retry_after`` (seconds, e.g. from an HTTP 429) waits at least that long,
up to ``max_s``. A retry is counted by the :class:`RetryCounter` the caller passes: the worker's is the
``drift_retries_total{operation}`` Prometheus counter (``streams.services.stats``); engine code never imports
Prometheus.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    stop_before_delay,
    stop_never,
)
from tenacity.stop import stop_base

T = TypeVar("T")
log = logging.getLogger(__name__)


class RetryCounter(Protocol):
    """Told the operation's name once per retry (not per first attempt)."""

    def __call__(self, operation: str, /) -> None: ...


def no_count(operation: str) -> None:
    """The counter of a caller without metrics."""


@dataclass(frozen=True)
class Backoff:
    """Jittered exponential backoff (see the module docstring); a tenacity ``wait``."""

    base_s: float
    max_s: float
    rng: random.Random = field(default_factory=random.Random, compare=False)

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """The wait after failed attempt ``attempt`` (1-based), raised to ``retry_after`` up to ``max_s``."""
        ceiling = min(self.max_s, self.base_s * 2 ** (attempt - 1))
        wait = self.rng.uniform(ceiling / 2, ceiling)
        if retry_after is not None:
            wait = max(wait, min(retry_after, self.max_s))
        return wait

    def __call__(self, state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome is not None else None
        hint = getattr(error, "retry_after", None)
        return self.delay(state.attempt_number, hint if isinstance(hint, int | float) else None)


@dataclass(frozen=True)
class RetryPolicy:
    """What to retry and for how long: ``retry_on`` tells a transient failure; at most ``max_attempts`` attempts
    (None: no cap) and no sleep that would end past ``deadline_s`` from the first attempt (None: no deadline)."""

    operation: str
    retry_on: Callable[[BaseException], bool]
    backoff: Backoff
    max_attempts: int | None = None
    deadline_s: float | None = None
    #: the log level of a retry's line (a stalled sink or an absent database is worth a warning)
    level: int = logging.INFO

    def _stop(self) -> stop_base:
        stop: stop_base = stop_never
        if self.max_attempts is not None:
            stop = stop | stop_after_attempt(self.max_attempts)
        if self.deadline_s is not None:
            stop = stop | stop_before_delay(self.deadline_s)
        return stop


async def retrying(call: Callable[[], Awaitable[T]], policy: RetryPolicy, count: RetryCounter = no_count) -> T:
    """``await call()``, retried under ``policy``; once it stops, the last failure is raised as it was."""

    def before_sleep(state: RetryCallState) -> None:
        count(policy.operation)
        error = state.outcome.exception() if state.outcome is not None else None
        wait = state.next_action.sleep if state.next_action is not None else 0.0
        log.log(policy.level, "%s: %s; retry %d in %.3f s", policy.operation, error, state.attempt_number, wait)

    async def attempt() -> T:  # a coroutine function: tenacity awaits only those (a lambda's result it would not)
        return await call()

    retryer = AsyncRetrying(
        retry=retry_if_exception(policy.retry_on), wait=policy.backoff, stop=policy._stop(), reraise=True,
        before_sleep=before_sleep,
    )  # fmt: skip
    return await retryer(attempt)
