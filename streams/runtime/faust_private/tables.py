"""Faust's tables: the table manager's start and rebalance steps (:mod:`streams.runtime.faust_app`), its
recovery service (:mod:`streams.runtime.readahead`), a table's store and the current event its writes follow."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, TypeVar, cast

from faust.streams import _current_event

R = TypeVar("R")

#: The private names reached below (part of :data:`streams.runtime.faust_private.PRIVATE_NAMES`).
NAMES: tuple[tuple[str, str, str], ...] = (
    ("faust.tables.manager:TableManager", "_update_channels", "method"),
    ("faust.tables.manager:TableManager", "_recovery_started", "attribute"),
    ("faust.tables.manager:TableManager", "_recovery", "attribute"),
    ("faust.tables.base:Collection", "_store", "attribute"),
    ("faust.streams", "_current_event", "global"),
)


async def update_table_channels(manager: Any) -> None:
    """What Faust's TableManager does on start after its fixed one-second sleep: subscribe the tables'
    changelogs and start each table (then the caller starts the recovery service)."""
    await manager._update_channels()


def close_table_registration(manager: Any) -> None:
    """What Faust's TableManager does first in a rebalance: no table may be added from now on."""
    manager._recovery_started.set()


def table_recovery(manager: Any, kind: Callable[..., R]) -> R:
    """The table manager's recovery service, made with ``kind`` (Faust's property makes a plain ``Recovery``)."""
    if manager._recovery is None:
        manager._recovery = kind(manager.app, manager, beacon=manager.beacon, loop=manager.loop)
    return cast(R, manager._recovery)


def table_store_url(table: Any) -> str:
    """The store URL a Faust table uses: its own, or the app's default (``memory://``, ``rocksdb://``…)."""
    return str(table._store or table.app.conf.store)


def set_current_event(event: Any) -> None:
    """Make ``event`` Faust's current event: Faust's own table writes take their changelog partition from it."""
    _current_event.set(weakref.ref(event))
