"""The narrow ports the services of one worker receive, and the two small objects behind them.

The worker (:mod:`streams.worker.app`) builds these in dependency order and hands each service only the ports
it uses, as constructor arguments:

- :class:`~streams.services.gate.Sender` (``send``): queue a record on the output producer; the returned future
  resolves once the broker has it;
- :data:`DeadLetter` (``dead_letter``): send a Faust event or message to ``dlq`` with a reason
  (:meth:`DeadLetters.record`);
- :data:`StoreAccess` (``store``): ``await store()`` is the open, migrated store (it waits until
  :meth:`WorkerStore.open` has connected);
- :data:`Ack`: ack a record on Faust's consumer.

Nothing here is a locator: a service that needs the store gets ``store``, not the worker.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from engine.errors import ConfigurationError
from engine.retry import Backoff, RetryCounter, RetryPolicy, no_count, retrying
from streams.services.configs import ConfigCache
from streams.services.gate import Sender
from streams.services.stats import GateStats
from streams.store import Store
from streams.wire.deadletters import batch_letter, record_letter

log = logging.getLogger(__name__)

DeadLetter = Callable[[Any, str], Awaitable[None]]  # (Faust event or message, reason)
StoreAccess = Callable[[], Awaitable[Store]]
Ack = Callable[[Any], None]

#: a worker's database while it is away: 0.25 s doubling to 5 s, jittered
STORE_BACKOFF = Backoff(0.25, 5.0)


class DeadLetters:
    """The dead-letter path of a worker: records go to ``dlq`` on ``send``, each counted in ``stats``."""

    def __init__(self, send: Sender, dlq: str, stats: GateStats) -> None:
        self._send = send
        self._dlq = dlq
        self._stats = stats

    async def record(self, record: Any, reason: str) -> None:
        """Send ``record`` (a Faust event or message) to the dead-letter topic with ``reason`` (cut to fit, see
        :mod:`streams.wire.deadletters`)."""
        message = getattr(record, "message", record)
        key = message.key if isinstance(message.key, bytes | None) else str(message.key).encode()
        value = message.value if isinstance(message.value, bytes | None) else str(message.value).encode()
        letter = record_letter(message.topic, message.partition, message.offset, key, value, reason)
        self._stats.dead_letters += 1
        await self._send(self._dlq, *letter)

    async def batch(self, topic: str, partition: int, first: int, last: int, reason: str) -> None:
        """Record a batch the consumer skipped (it could not be decoded) and wait until the broker has it."""
        self._stats.dead_letters += last - first + 1
        delivered = await self._send(self._dlq, *batch_letter(topic, partition, first, last, reason))
        await delivered


class WorkerStore:
    """The worker's database: opened once by :meth:`open` (retrying until it answers); ``await worker_store()``
    waits for it. ``waiting_for`` says why the worker is not ready yet (``/health``), None once it is."""

    def __init__(self, url: str, on_retry: RetryCounter = no_count) -> None:
        if not url:
            raise ConfigurationError("the worker needs a database URL (DRIFT_DATABASE_URL or an embedded data dir)")
        self._url = url
        self.on_retry = on_retry  # also counts the retries of a restore's own pool (streams.worker.restoring)
        self._store: Store | None = None
        self.ready = asyncio.Event()
        self.waiting_for: str | None = "starting"

    async def __call__(self) -> Store:
        await self.ready.wait()
        assert self._store is not None  # set before ready
        return self._store

    @property
    def store(self) -> Store | None:
        """The store once connected (None before)."""
        return self._store

    async def open(self, configs: ConfigCache) -> None:
        """Connect, migrate and load the agent configurations into ``configs``, retrying (with the reason in
        :attr:`waiting_for`) until the database answers: a worker never gates with defaults because its
        database is not there yet. The retries are the one policy's (:mod:`engine.retry`), jittered so the
        workers of a fleet do not all come back at once, with no deadline."""
        policy = RetryPolicy("database_open", lambda exc: isinstance(exc, Exception) and
                             not isinstance(exc, ConfigurationError), STORE_BACKOFF, level=logging.WARNING)  # fmt: skip
        await retrying(lambda: self._open_once(configs), policy, self.on_retry)
        self.waiting_for = None
        self.ready.set()

    async def _open_once(self, configs: ConfigCache) -> None:
        try:
            if self._store is None:
                self.waiting_for = "connecting to the database"
                self._store = await Store.connect(self._url)
            self.waiting_for = "migrating the database"
            await self._store.migrate()
            self.waiting_for = "loading agent configurations"
            await configs.load(self._store)
        except ConfigurationError:
            raise
        except Exception as exc:  # unreachable, restarting, locked: say why, then the policy waits
            self.waiting_for = f"waiting for the database: {exc}"
            raise
