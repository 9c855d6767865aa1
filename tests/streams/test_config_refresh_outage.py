"""The configuration refresh survives every way a database goes away (found by make chaos, postgres-outage: an
asyncpg error while the server shut down escaped the refresh timer and stopped the worker)."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest

from streams.services.configs import ConfigCache
from tests.streams.fakes import access


class GoneStore:
    def __init__(self, error: Exception) -> None:
        self.error = error

    async def ensure_agents(self, agents: Any) -> None:
        raise self.error

    async def configs_changed_since(self, since: Any) -> Any:
        raise self.error

    async def configs_of(self, agent_ids: Any) -> Any:
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


@pytest.mark.parametrize("error", [asyncpg.exceptions.CannotConnectNowError("shutting down"), OSError("socket")])
async def test_agents_whose_stored_config_cannot_be_read_get_the_defaults_until_a_refresh(error: Exception) -> None:
    cache = ConfigCache(access(GoneStore(error)))
    await cache.ensure(["returning"])  # the read fails: logged, not raised (the gate goes on)
    assert cache.known("returning") is None


async def test_a_bug_in_the_first_sight_read_still_surfaces() -> None:
    cache = ConfigCache(access(GoneStore(KeyError("bug"))))
    with pytest.raises(KeyError):
        await cache.ensure(["returning"])
