"""DirectTable: store writes, one changelog record per dirty key, delivery futures for acking.

Each test runs in its own task, so setting ``table_partition`` does not leak into other tests."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from engine.errors import ConfigurationError
from streams.runtime.tables import DirectTable, table_partition

Sent = list[tuple[str, bytes, bytes | None, int | None]]


class FakeTopic:
    def get_topic_name(self) -> str:
        return "app-recent-messages-changelog"


class FakeTable:
    """A stand-in for a Faust table: its in-memory store, its store URL and its changelog topic."""

    name = "recent-messages"

    def __init__(self, store: str | None = None, app_store: str = "memory://") -> None:
        self.data: dict[str, object] = {}
        self.changelog_topic = FakeTopic()
        self._store = store
        self.app = SimpleNamespace(conf=SimpleNamespace(store=app_store))


def make_table(sent: Sent, *, settle: bool = True) -> tuple[DirectTable, list[asyncio.Future[object]]]:
    futures: list[asyncio.Future[object]] = []

    async def send(topic: str, key: bytes, value: bytes | None, partition: int | None) -> asyncio.Future[object]:
        sent.append((topic, key, value, partition))
        future: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        if settle:
            future.set_result(None)
        futures.append(future)
        return future

    return DirectTable(FakeTable(), send), futures


async def test_writes_update_the_store_and_flush_partitioned_records_and_tombstones() -> None:
    sent: Sent = []
    table, _ = make_table(sent)
    table_partition.set(2)
    table["pam"] = [{"id": "m1"}]
    del table["jim"]
    assert table["pam"] == [{"id": "m1"}] and "jim" not in table and len(table) == 1
    deliveries = await table.flush()
    assert len(deliveries) == 2
    assert sent == [
        ("app-recent-messages-changelog", b'"pam"', b'[{"id":"m1"}]', 2),
        ("app-recent-messages-changelog", b'"jim"', None, 2),  # a tombstone: Faust deletes the key on recovery
    ]
    sent.clear()
    await asyncio.sleep(0)  # the delivered records are settled
    assert await table.flush() == [] and sent == []


async def test_several_writes_of_one_key_cost_one_record_with_the_last_value() -> None:
    sent: Sent = []
    table, _ = make_table(sent)
    table_partition.set(1)
    for n in range(5):
        table["pam"] = [n]
    await table.flush()
    assert sent == [("app-recent-messages-changelog", b'"pam"', b"[4]", 1)]


async def test_a_key_scoped_flush_leaves_other_keys_dirty() -> None:
    sent: Sent = []
    table, _ = make_table(sent)
    table_partition.set(0)
    table["pam"] = [1]
    table["jim"] = [2]
    await table.flush(["pam"])
    assert [key for _, key, _, _ in sent] == [b'"pam"']
    await table.flush()
    assert [key for _, key, _, _ in sent] == [b'"pam"', b'"jim"']


async def test_a_flush_returns_undelivered_records_another_flush_sent() -> None:
    """A writer must not ack before its write is durable, even when someone else's flush sent the record."""
    sent: Sent = []
    table, futures = make_table(sent, settle=False)
    table_partition.set(0)
    table["pam"] = [1]
    first = await table.flush()
    again = await table.flush(["pam"])
    assert len(sent) == 1 and again == first == [futures[0]]
    futures[0].set_result(None)
    await asyncio.sleep(0)
    assert await table.flush(["pam"]) == []


async def test_a_write_without_a_source_partition_is_refused() -> None:
    table, _ = make_table([])
    with pytest.raises(RuntimeError, match="partition"):
        table["pam"] = [1]


@pytest.mark.parametrize(("store", "app_store"), [("rocksdb://", "memory://"), (None, "rocksdb://")])
def test_a_persisted_table_store_is_refused(store: str | None, app_store: str) -> None:
    """Direct writes skip Faust's persisted-offset bookkeeping: only an in-memory store is safe."""

    async def send(topic: str, key: bytes, value: bytes | None, partition: int | None) -> asyncio.Future[object]:
        raise AssertionError("never sent")

    with pytest.raises(ConfigurationError, match="memory://"):
        DirectTable(FakeTable(store, app_store), send)
    DirectTable(FakeTable(None, "memory://"), send)  # the worker's own configuration
