"""Per-key ordering with cross-key concurrency.

Drafts of one agent must be decided in order, but a slow judge call for one agent must never block another
agent in the same partition. :class:`KeyedDispatcher` keeps one FIFO per key and one task per busy key;
``submit`` returns as soon as the item is queued, waiting only when ``max_in_flight`` items are pending
(backpressure on the consuming stream).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

T = TypeVar("T")
log = logging.getLogger(__name__)


class KeyedDispatcher(Generic[T]):
    def __init__(self, handler: Callable[[T], Awaitable[None]], *, max_in_flight: int = 10_000) -> None:
        self._handler = handler
        self._queues: dict[str, deque[T]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._task_of: dict[str, asyncio.Task[None]] = {}
        self._slots = asyncio.Semaphore(max_in_flight)
        self._idle = asyncio.Event()
        self._idle.set()
        self.in_flight = 0

    async def submit(self, key: str, item: T) -> None:
        await self._slots.acquire()
        self.in_flight += 1
        self._idle.clear()
        queue = self._queues.get(key)
        if queue is not None:
            queue.append(item)
            return
        self._queues[key] = deque([item])
        task = asyncio.create_task(self._drain(key), name=f"dispatch:{key}")
        self._tasks.add(task)
        self._task_of[key] = task
        task.add_done_callback(self._tasks.discard)

    async def _drain(self, key: str) -> None:
        queue = self._queues[key]
        while queue:
            item = queue[0]
            try:
                await self._handler(item)
            except Exception:  # the handler is total; this is a last line of defence
                log.exception("handler failed for key %s", key)
            finally:
                queue.popleft()
                self.in_flight -= 1
                self._slots.release()
        del self._queues[key]
        del self._task_of[key]
        if not self._queues:
            self._idle.set()

    async def withdraw(self, unwanted: Callable[[T], bool]) -> list[T]:
        """Remove the queued items for which ``unwanted`` holds and that have not started, and wait until the
        running ones for which it holds have finished. Returns the removed items.

        An item's key fixes its partition, so the items of one key are all wanted or all unwanted: once its
        running item is done, an unwanted key's queue is empty and its task ends."""
        removed: list[T] = []
        finishing: list[asyncio.Task[None]] = []
        for key, queue in self._queues.items():
            head, rest = queue[0], list(queue)[1:]
            queue.clear()
            queue.append(head)
            for item in rest:
                (removed if unwanted(item) else queue).append(item)
            if unwanted(head):
                finishing.append(self._task_of[key])
        for _ in removed:
            self.in_flight -= 1
            self._slots.release()
        if finishing:
            await asyncio.wait(finishing)
        return removed

    def busy(self, key: str) -> bool:
        """True while items of ``key`` are queued or running (a new item must queue behind them)."""
        return key in self._queues

    async def wait_idle(self) -> None:
        await self._idle.wait()

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
