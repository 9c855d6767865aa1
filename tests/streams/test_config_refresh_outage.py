"""The configuration refresh survives every way a database goes away (found by make chaos, postgres-outage: an
asyncpg error while the server shut down escaped the refresh timer and stopped the worker)."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest

from streams.services.configs import ConfigCache


class GoneStore:
    def __init__(self, error: Exception) -> None:
        self.error = error

    async def ensure_agents(self, agents: Any) -> None:
        raise self.error

    async def configs_changed_since(self, since: Any) -> Any:
        raise self.error


@pytest.mark.parametrize(
    "error",
    [asyncpg.exceptions.CannotConnectNowError("the database system is shutting down"),
     asyncpg.exceptions.ConnectionDoesNotExistError("connection was closed in the middle of operation"),
     asyncpg.exceptions.AdminShutdownError("terminating connection"), FileNotFoundError(2, "socket")],
)  # fmt: skip
async def test_a_refresh_while_the_database_is_away_keeps_the_cache(error: Exception) -> None:
    cache = ConfigCache()
    assert await cache.refresh(GoneStore(error)) == 0  # type: ignore[arg-type]


async def test_a_bug_still_surfaces() -> None:
    cache = ConfigCache()
    with pytest.raises(KeyError):
        await cache.refresh(GoneStore(KeyError("bug")))  # type: ignore[arg-type]
