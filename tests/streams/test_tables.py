"""DirectTable: store writes, one changelog record per dirty key, delivery futures for acking.

Writes name their source partition explicitly (``table.at(partition)``): there is no ambient partition."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import orjson
import pytest

from engine.errors import ConfigurationError
from streams.runtime.tables import DirectTable

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

    def apply_changelog_batch(self, batch: Any) -> None:
        """What Faust's memory store does with changelog records: set, or delete on a tombstone."""
        for event in batch:
            key = orjson.loads(event.message.key)
            if event.message.value is None:
                self.data.pop(key, None)
            else:
                self.data[key] = orjson.loads(event.message.value)


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
    writes = table.at(2)
    writes["pam"] = [{"id": "m1"}]
    del writes["jim"]
    assert table["pam"] == [{"id": "m1"}] and "jim" not in table and len(table) == 1
    assert writes["pam"] == [{"id": "m1"}] and len(writes) == 1  # the bound view reads the table
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
    for n in range(5):
        table.at(1)["pam"] = [n]
    await table.flush()
    assert sent == [("app-recent-messages-changelog", b'"pam"', b"[4]", 1)]


async def test_a_key_scoped_flush_leaves_other_keys_dirty() -> None:
    sent: Sent = []
    table, _ = make_table(sent)
    table.at(0)["pam"] = [1]
    table.at(0)["jim"] = [2]
    await table.flush(["pam"])
    assert [key for _, key, _, _ in sent] == [b'"pam"']
    await table.flush()
    assert [key for _, key, _, _ in sent] == [b'"pam"', b'"jim"']


async def test_a_flush_returns_undelivered_records_another_flush_sent() -> None:
    """A writer must not ack before its write is durable, even when someone else's flush sent the record."""
    sent: Sent = []
    table, futures = make_table(sent, settle=False)
    table.at(0)["pam"] = [1]
    first = await table.flush()
    again = await table.flush(["pam"])
    assert len(sent) == 1 and again == first == [futures[0]]
    futures[0].set_result(None)
    await asyncio.sleep(0)
    assert await table.flush(["pam"]) == []


async def test_delivered_and_lost_changelog_records_are_told_to_the_store() -> None:
    """A restore store that keeps a partition's memory across rebalances learns how far its changelog is in memory
    (streams.runtime.restore_store.RestoreStore.note_written) and that a write of it was lost (note_failed)."""
    sent: Sent = []
    table, futures = make_table(sent, settle=False)
    failed: list[int] = []
    written: list[tuple[int, int]] = []
    table._note_failed = failed.append  # what the restore store offers
    table._note_written = lambda partition, offset: written.append((partition, offset))
    table.at(0)["pam"] = [1]
    table.at(2)["jim"] = [2]
    await table.flush()
    futures[0].set_result(SimpleNamespace(offset=17))  # aiokafka's RecordMetadata
    futures[1].set_exception(ConnectionError("the broker went away"))
    await asyncio.sleep(0)
    assert failed == [2] and written == [(0, 17)]


async def test_a_write_without_a_source_partition_is_refused() -> None:
    table, _ = make_table([])
    with pytest.raises(TypeError, match="partition"):
        table["pam"] = [1]
    with pytest.raises(RuntimeError, match="partition"):
        table.at(None)["pam"] = [1]
    assert "pam" not in table


async def test_the_last_write_of_a_key_names_its_changelog_partition() -> None:
    sent: Sent = []
    table, _ = make_table(sent)
    table.at(0)["pam"] = [1]
    table.at(2)["jim"] = [2]
    await table.flush()
    assert [(key, partition) for _, key, _, partition in sent] == [(b'"pam"', 0), (b'"jim"', 2)]


@pytest.mark.parametrize(("store", "app_store"), [("rocksdb://", "memory://"), (None, "rocksdb://")])
def test_a_persisted_table_store_is_refused(store: str | None, app_store: str) -> None:
    """Direct writes skip Faust's persisted-offset bookkeeping: only an in-memory store is safe."""

    async def send(topic: str, key: bytes, value: bytes | None, partition: int | None) -> asyncio.Future[object]:
        raise AssertionError("never sent")

    with pytest.raises(ConfigurationError, match="memory://"):
        DirectTable(FakeTable(store, app_store), send)
    DirectTable(FakeTable(None, "memory://"), send)  # the worker's own configuration
