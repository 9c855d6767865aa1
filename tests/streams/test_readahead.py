"""A table's read-ahead goes on past the rebalance callback, and Faust's recovery waits for it before it decides
where its own reading starts (:mod:`streams.runtime.readahead`)."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from faust.types import TP

from engine.settings import Settings
from streams.runtime.faust_app import faust_app
from streams.runtime.readahead import READ_ON_S, ReadAheadRecovery, Reading, readings
from streams.runtime.restore import PENDING_TABLE, RestorePlan
from streams.runtime.restore_store import RestoreStore
from streams.runtime.tails import ChangelogMessage
from tests.streams.fakes import NothingToClose, no_skipped_batches


async def no_database(timeout_s: float | None) -> None:
    return None


async def test_recovery_waits_for_a_read_ahead_that_outlasts_the_callback_and_starts_after_it(tmp_path: Path) -> None:
    app = faust_app(Settings(data_dir=tmp_path, database_url=""), partitions=3, closing=NothingToClose(),
                    skipped=no_skipped_batches)  # fmt: skip
    table = app.Table("a", default=list)
    store = table.data
    manager: Any = app.tables
    assert isinstance(store, RestoreStore) and isinstance(manager.recovery, ReadAheadRecovery)
    assert app.conf.broker_request_timeout > READ_ON_S  # the recovery's wait for a read ends with the read
    plan = RestorePlan(Settings(restore_window_s=900), no_database, partitions=3, kept=10)
    released = asyncio.Event()

    async def start_offsets(topic: str, partitions: Any) -> dict[int, int]:
        return {p: 0 for p in partitions}

    async def read_tails(
        topic: str, starts: dict[int, int | None], ends_known: Any = None
    ) -> dict[int, list[ChangelogMessage]]:
        await released.wait()  # a long tail
        return {p: [ChangelogMessage(b'"k%d"' % i, b"[%d]" % i, p, i) for i in range(10)] for p in starts}

    plan.start_offsets, plan.read_tails = start_offsets, read_tails  # type: ignore[method-assign]
    app.restore = plan
    tp = TP(store.topic, 1)
    async with asyncio.timeout(5):
        await store.on_rebalance({tp}, set(), {tp})  # the callback returns while the tail is still being read
    assert store.persisted_offset(tp) is None  # what Faust's recovery reads in the callback: not looked up yet
    recovery = manager.recovery
    recovery.tp_to_table[tp] = table
    asked: list[Any] = []

    async def earliest(*tps: Any) -> dict[Any, int]:
        asked.append(tps)
        return await _earliest(tps)

    consumer = SimpleNamespace(earliest_offsets=earliest)
    offsets: Counter[Any] = Counter({tp: store.persisted_offset(tp)})
    build = asyncio.ensure_future(recovery._build_offsets(consumer, {tp}, offsets, "active"))
    await asyncio.sleep(0.05)
    assert not build.done()  # Faust's recovery waits for the read
    assert asked == [(tp,)]  # ... with the earliest offsets asked for meanwhile (a listing on the embedded broker)
    released.set()
    async with asyncio.timeout(5):
        await build
    assert offsets[tp] == 9 and store["k9"] == [9]  # it starts after the read-ahead: nothing left to read


async def test_a_highwater_the_broker_lists_below_what_a_table_applied_is_raised_to_it(tmp_path: Path) -> None:
    """The embedded broker's listing lags its newest batches: a kept partition's own writes, acknowledged, must not
    read as lost data (Faust's consistency check crashed the worker)."""
    app = faust_app(Settings(data_dir=tmp_path, database_url=""), partitions=3, closing=NothingToClose(),
                    skipped=no_skipped_batches)  # fmt: skip
    table = app.Table("b", default=list)
    recovery: Any = app.tables.recovery  # type: ignore[attr-defined]
    store: Any = table.data
    ahead, behind = TP(store.topic, 0), TP(store.topic, 1)
    for tp in (ahead, behind):
        recovery.tp_to_table[tp] = table
    store.set_persisted_offset(ahead, 6048)  # acknowledged writes of this worker
    store.set_persisted_offset(behind, 10)

    recovery.active_highwaters.update({ahead: 6045, behind: 20})  # as listed: the last record 6045 and 20
    consumer = SimpleNamespace(earliest_offsets=lambda *tps: _earliest(tps))
    offsets: Counter[Any] = Counter()
    await recovery._build_offsets(consumer, {ahead, behind}, offsets, "active")
    assert offsets[ahead] == 6048 and recovery.active_highwaters[ahead] == 6048  # raised to what was applied
    assert offsets[behind] == 10 and recovery.active_highwaters[behind] == 20  # as listed


async def _earliest(tps: Any) -> dict[Any, int]:
    return {tp: 0 for tp in tps}


async def test_a_next_rebalance_cancels_a_read_still_going_and_a_failed_read_ends_it() -> None:
    reading, begun, cancelled = Reading(), asyncio.Event(), asyncio.Event()

    async def endless() -> None:
        begun.set()
        try:
            await asyncio.sleep(3600)
        finally:
            cancelled.set()

    async def fails() -> None:
        raise ConnectionError("broker gone")

    await reading.start(endless, "t")
    await begun.wait()
    await reading.start(fails, "t")  # the rebalance after: the first read is cancelled first
    assert cancelled.is_set()
    async with asyncio.timeout(5):
        await reading.done()  # a failed read ends (logged); Faust's recovery reads the tail
    assert readings([SimpleNamespace(data=SimpleNamespace(reading=reading)), SimpleNamespace(data={})]) == [reading]


async def test_pending_attempts_are_read_behind_the_recovery_and_a_newer_write_wins(tmp_path: Path) -> None:
    """Faust's recovery waits only for the tail's end offsets; the worker judges meanwhile, a later attempt waits
    for the tail (restored), and a key written directly during the read keeps its value."""
    app = faust_app(Settings(data_dir=tmp_path, database_url=""), partitions=3, closing=NothingToClose(),
                    skipped=no_skipped_batches)  # fmt: skip
    table = app.Table(PENDING_TABLE, default=list)
    store: Any = table.data
    recovery: Any = app.tables.recovery  # type: ignore[attr-defined]
    plan = RestorePlan(Settings(restore_window_s=900), no_database, partitions=3, kept=10)
    released = asyncio.Event()

    async def start_offsets(topic: str, partitions: Any) -> dict[int, int]:
        return {p: 0 for p in partitions}

    async def read_tails(topic: str, starts: dict[int, int | None], ends_known: Any = None) -> Any:
        ends_known({1: 10})
        await released.wait()  # a long tail
        return {1: [ChangelogMessage(b'"k%d"' % i, b"[%d]" % i, 1, i) for i in range(10)]}

    plan.start_offsets, plan.read_tails = start_offsets, read_tails  # type: ignore[method-assign]
    app.restore = plan
    tp = TP(store.topic, 1)
    recovery.tp_to_table[tp] = table
    await store.on_rebalance({tp}, set(), {tp})
    offsets: Counter[Any] = Counter({tp: store.persisted_offset(tp)})
    consumer = SimpleNamespace(earliest_offsets=lambda *tps: _earliest(tps))
    async with asyncio.timeout(5):
        await recovery._build_offsets(consumer, {tp}, offsets, "active")  # not waiting for the records
    assert offsets[tp] == 9 and "k3" not in store  # Faust reads nothing: it starts after the tail
    waiter = asyncio.ensure_future(store.restored(1))
    await store.restored(0)  # another partition: at once
    store.note_partition("k5", 1)
    store.data["k5"] = ["written meanwhile"]  # a direct write during the read
    await asyncio.sleep(0.01)
    assert store.restoring(1) and not waiter.done()
    released.set()
    async with asyncio.timeout(5):
        await waiter
    assert store["k3"] == [3] and store["k5"] == ["written meanwhile"] and not store.restoring(1)


async def test_a_read_behind_the_recovery_that_does_not_end_is_read_again_at_the_next_rebalance(
    tmp_path: Path,
) -> None:
    app = faust_app(Settings(data_dir=tmp_path, database_url=""), partitions=3, closing=NothingToClose(),
                    skipped=no_skipped_batches)  # fmt: skip
    store: Any = app.Table(PENDING_TABLE, default=list).data
    plan = RestorePlan(Settings(restore_window_s=900), no_database, partitions=3, kept=10)
    reads: list[dict[int, int | None]] = []

    async def start_offsets(topic: str, partitions: Any) -> dict[int, int]:
        return {p: 0 for p in partitions}

    async def read_tails(topic: str, starts: dict[int, int | None], ends_known: Any = None) -> Any:
        reads.append(starts)
        ends_known({p: 10 for p in starts})
        await asyncio.sleep(3600)  # a broker that stopped answering, until the next rebalance

    plan.start_offsets, plan.read_tails = start_offsets, read_tails  # type: ignore[method-assign]
    app.restore = plan
    tps = {TP(store.topic, 1), TP(store.topic, 2)}
    await store.on_rebalance(tps, set(), tps)
    await store.reading.done()
    await store.on_recovery_completed(tps, set())
    waiter = asyncio.ensure_future(store.restored(2))
    await store.on_rebalance(tps, set(), set())  # both kept, but their memory is not whole: read again
    assert reads[-1] == {1: 0, 2: 0}
    async with asyncio.timeout(5):
        await waiter  # the cancelled read ended the wait
