"""Stand-ins for the ports a Faust app built by ``streams.runtime.faust_app`` needs, for tests that never start it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any


class NothingToClose:
    """The app's ``closing`` when no output producer was built."""

    async def close(self) -> None:
        return None


async def no_skipped_batches(topic: str, partition: int, first: int, last: int, reason: str) -> None:
    raise AssertionError(f"no batch is skipped in this test: {topic}[{partition}] {first}..{last}: {reason}")


def access(store: Any) -> Callable[[], Awaitable[Any]]:
    """A store port (``await port()`` is the store) over a fake store."""

    async def port() -> Any:
        return store

    return port
