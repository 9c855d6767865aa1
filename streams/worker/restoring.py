"""Bounded table restores of one worker (:mod:`streams.runtime.restore`), bound to its database."""

from __future__ import annotations

import asyncio
import logging

from engine.errors import ServiceError
from engine.retry import Backoff, RetryCounter, RetryPolicy, retrying
from engine.settings import Settings
from streams.runtime.restore import RestorePlan
from streams.services.context import WorkerStore
from streams.services.gate import RECENT_KEPT
from streams.store import Store
from streams.store.restore import RestoreQueries

log = logging.getLogger(__name__)


class RestoreDatabase:
    """The database a restore reads: the worker's store once it is open, before that a small pool of its own
    (Faust restores the tables before the worker's tasks — the store among them — start)."""

    def __init__(self, settings: Settings, store: WorkerStore) -> None:
        self.settings = settings
        self.store = store
        self._own: Store | None = None
        self._lock = asyncio.Lock()

    async def __call__(self, timeout_s: float | None) -> RestoreQueries | None:
        if self.store.ready.is_set():
            return await self.store()
        async with self._lock:
            if self._own is None:
                self._own = await _connect(self.settings, 30.0 if timeout_s is None else timeout_s, self.store.on_retry)
        return self._own

    async def close(self) -> None:
        if self._own is not None:
            own, self._own = self._own, None
            await own.close()


#: a restore's own database pool while the database comes up, within the restore's deadline
RESTORE_CONNECT_BACKOFF = Backoff(0.25, 2.0)


async def _connect(settings: Settings, timeout_s: float, on_retry: RetryCounter) -> Store | None:
    policy = RetryPolicy("restore_database_connect", lambda exc: isinstance(exc, ServiceError),
                         RESTORE_CONNECT_BACKOFF, deadline_s=timeout_s)  # fmt: skip
    try:
        return await retrying(
            lambda: Store.connect(settings.database(), min_size=1, max_size=2, timeout_s=max(timeout_s, 1.0)),
            policy, on_retry,
        )  # fmt: skip
    except ServiceError as exc:
        log.error("restore: %s", exc)
        return None


def restore_plan(settings: Settings, store: WorkerStore, partitions: int) -> RestorePlan:
    """The :class:`RestorePlan` of a worker's tables, reading the worker's database (``store``) (how long a restore
    takes is the ``table_restore_seconds`` gauge, :mod:`streams.services.eviction`)."""
    database = RestoreDatabase(settings, store)
    return RestorePlan(settings, database, partitions=partitions, kept=RECENT_KEPT, close=database.close)
