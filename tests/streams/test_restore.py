"""Bounded restores without a broker: compacted changelog configuration, the windows rebuilt from the record, the
restore store's start offsets and its memory of partitions (see :mod:`streams.runtime.restore`)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from aiokafka.partitioner import DefaultPartitioner
from faust.types import TP

from engine.settings import Settings
from streams.runtime.faust_app import faust_app
from streams.runtime.readahead import readings
from streams.runtime.restore import agent_partition, recent_entries
from streams.runtime.restore_store import RestoreStore
from streams.runtime.tails import ChangelogMessage
from streams.services.gate import RECENT_KEPT, remember_commit
from streams.store.restore import RecentAction
from streams.wire import kafka
from streams.wire.topics import changelog_topics, topic_configs
from tests.streams.fakes import NothingToClose, no_skipped_batches

REPO = Path(__file__).resolve().parents[2]


def test_every_changelog_is_compacted_and_the_windowed_one_expires() -> None:
    settings = Settings(topic_prefix="p.", eval_window_s=600)
    configs = topic_configs(settings)
    assert configs.pop("p.shadows") == {"cleanup.policy": "compact"}  # a shadow's latest state per name (issue 30)
    assert set(configs) == set(changelog_topics(settings))
    counts = next(name for name in configs if "message-counts" in name)
    assert configs.pop(counts) == {"cleanup.policy": "compact,delete", "retention.ms": "1200000"}
    assert all(c == {"cleanup.policy": "compact"} for c in configs.values()) and len(configs) == 3


def test_topic_creation_sends_the_changelog_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    created: list[Any] = []

    class Admin:
        def __init__(self, **kwargs: Any) -> None: ...
        async def start(self) -> None: ...
        async def close(self) -> None: ...
        async def list_topics(self) -> list[str]:
            return []

        async def create_topics(self, topics: list[Any]) -> Any:
            created.extend(topics)
            return SimpleNamespace(topic_errors=[(t.name, 0, None) for t in topics])

    monkeypatch.setattr(kafka, "AIOKafkaAdminClient", Admin)
    settings = Settings(topic_prefix="p.")
    asyncio.run(kafka.create_topics(settings))
    configs = {t.name: t.topic_configs for t in created}
    for name in changelog_topics(settings):
        assert configs[name]["cleanup.policy"].startswith("compact"), name
    assert configs["p.drafts"] == {}  # protocol topics keep the broker's defaults (delete after retention)


def test_the_compose_docs_say_changelogs_are_compacted() -> None:
    assert "cleanup.policy=compact" in (REPO / "docker-compose.yml").read_text()
    assert "cleanup.policy=compact" in (REPO / "docs" / "operations.md").read_text()


def test_rebuilt_entries_are_what_the_gate_wrote() -> None:
    written: dict[str, Any] = {}
    texts = [f"message number {i}" for i in range(1, 13)]
    for i, text in enumerate(texts, 1):
        remember_commit(written, "kevin", f"m{i}", text, "office" if i % 2 else None)
    newest = [
        RecentAction("kevin", f"m{i}", text, "office" if i % 2 else None, total=12) for i, text in enumerate(texts, 1)
    ][-RECENT_KEPT:]
    assert recent_entries(newest) == written


def test_agent_partition_is_the_producers_default_partitioner() -> None:
    partitioner = DefaultPartitioner()
    for agent in ("angela", "oscar", "kevin-42", "Ünïcode"):
        key = agent.encode()
        assert agent_partition(agent, 3) == partitioner(key, [0, 1, 2], [0, 1, 2])


async def test_a_store_starts_at_its_checkpoint_and_forgets_partitions_it_lost(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, database_url="")
    app = faust_app(settings, partitions=3, closing=NothingToClose(), skipped=no_skipped_batches)
    store = app.Table("t", default=list).data
    assert isinstance(store, RestoreStore)
    assert store.persisted_offset(TP("x", 0)) is None  # no checkpoint: Faust's beginning
    store.starts = {1: 500}
    assert store.persisted_offset(TP("x", 1)) == 499  # the record before is read again
    store.data.update(a=[1], b=[2], c=[3])
    for key, partition in (("a", 0), ("b", 1), ("c", 2)):
        store.note_partition(key, partition)
    await store.on_recovery_completed({TP("x", 0), TP("x", 2)}, set())
    assert dict(store.data) == {"a": [1], "c": [3]} and store.active == {0, 2}


async def test_a_kept_partition_is_not_restored_again_unless_its_memory_may_differ(tmp_path: Path) -> None:
    from streams.runtime.restore import RestorePlan

    async def no_database(timeout_s: float | None) -> None:
        return None

    app = faust_app(Settings(data_dir=tmp_path, database_url=""), partitions=3, closing=NothingToClose(),
                    skipped=no_skipped_batches)  # fmt: skip
    store = app.Table("t", default=list).data
    assert isinstance(store, RestoreStore)
    plan = RestorePlan(Settings(restore_window_s=900), no_database, partitions=3, kept=10)

    async def start_offsets(topic: str, partitions: Any) -> dict[int, int]:
        return {p: 5 for p in partitions}  # each partition's checkpoint

    read: list[dict[int, int | None]] = []

    async def read_tails(
        topic: str, starts: dict[int, int | None], ends_known: Any = None
    ) -> dict[int, list[ChangelogMessage]]:
        read.append(starts)  # partition 2's tail holds two records: read ahead, Faust starts after them
        return {p: [ChangelogMessage(b'"k2"', b"[1]", 2, 5), ChangelogMessage(b'"k2"', b"[1,2]", 2, 6)]
                if p == 2 else [] for p in starts}  # fmt: skip

    plan.start_offsets, plan.read_tails = start_offsets, read_tails  # type: ignore[method-assign]
    app.restore = plan

    def tps(*partitions: int) -> set[TP]:  # the changelog's and a source topic's partitions, as Faust assigns
        return {TP(store.topic, p) for p in partitions} | {TP("p.drafts", p) for p in partitions}

    async def rebalance(assigned: set[TP], new: set[TP]) -> list[int | None]:
        await store.on_rebalance(assigned, set(), new)
        await store.reading.done()  # Faust's recovery waits for it (streams.runtime.readahead)
        return [store.persisted_offset(TP(store.topic, p)) for p in (0, 1, 2)]

    assert await rebalance(tps(0, 1), tps(0, 1)) == [4, 4, None]  # all new: from their checkpoints (empty tails)
    await store.on_recovery_completed(tps(0, 1), set())
    store.set_persisted_offset(TP(store.topic, 0), 41)  # Faust: a changelog record of its own writes delivered
    store.note_written(1, 7)  # a DirectTable record delivered
    store.note_failed(1)  # ... and one lost: memory may hold what the changelog does not
    assert await rebalance(tps(0, 1, 2), tps(2)) == [41, 4, 6]  # 0 kept: nothing to read; 1 and 2 restored
    assert read[-1] == {1: 5, 2: 5} and store.data["k2"] == [1, 2]  # from their checkpoints, through the table
    # a rebalance before that restore completed: nothing is known to be whole, every partition is restored
    assert await rebalance(tps(0, 1, 2), set()) == [4, 4, 6]
    await store.on_recovery_completed(tps(0, 1, 2), set())
    store.note_written(0, 50)
    assert await rebalance(tps(0, 2), set()) == [50, None, 6]  # 1 went elsewhere; 2's restored records count


def test_existing_changelogs_without_compaction_get_it(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings(topic_prefix="p.")
    recent, verdicts = (name for name in changelog_topics(settings) if "recent" in name or "verdict" in name)
    altered: list[Any] = []

    class Admin:
        async def describe_configs(self, resources: list[Any]) -> list[Any]:
            entries = {recent: [("cleanup.policy", "delete")], verdicts: [("cleanup.policy", "compact")]}
            rows = [(0, "", 2, r.name, entries.get(r.name, [])) for r in resources]
            return [SimpleNamespace(resources=rows)]

        async def alter_configs(self, resources: list[Any]) -> None:
            altered.extend((r.name, r.configs) for r in resources)

    changed = asyncio.run(kafka.compact_existing(Admin(), settings, sorted([recent, verdicts, "p.drafts"])))
    assert changed == [recent] and altered == [(recent, {"cleanup.policy": "compact"})]


def test_pending_attempts_restore_at_least_their_ttl() -> None:
    from streams.runtime.restore import RestorePlan

    async def no_database(timeout_s: float | None) -> None:
        return None

    plan = RestorePlan(Settings(restore_window_s=900, pending_ttl_s=3600), no_database, partitions=3, kept=10)
    assert plan.window_s("persona-drift-drift-pending-attempts-changelog") == 3600
    assert plan.window_s("persona-drift-drift-verdict-records-changelog") == 900


def test_without_a_database_lookups_after_one_that_waited_in_vain_do_not_wait() -> None:
    """The tables of one rebalance now look up side by side (their waits overlap); a lookup that comes after one
    gave up — the next rebalance's — does not wait again."""
    from streams.runtime.restore import LOOKUP_WAIT_S, RestorePlan

    waits: list[float | None] = []

    async def unreachable(timeout_s: float | None) -> None:
        waits.append(timeout_s)

    async def rebalance() -> list[dict[int, int]]:
        plan = RestorePlan(Settings(restore_window_s=900), unreachable, partitions=3, kept=10)
        tables = ("recent-messages", "verdict-records", "pending-attempts", "message-counts")
        return [await plan.start_offsets(f"p-drift-{name}-changelog", {0, 1, 2}) for name in tables]

    assert asyncio.run(rebalance()) == [{}, {}, {}, {}]  # whole changelogs: slower, never wrong
    assert waits == [LOOKUP_WAIT_S, 0.0, 0.0, 0.0]  # not another full wait inside each later rebalance callback


async def test_the_tables_prepare_their_restores_side_by_side(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each table's read-ahead waits here until every table has begun its own: one after another (Faust's
    order) it would never finish; side by side, the drafts of a moved partition wait for the slowest table only."""
    from streams.runtime import faust_private
    from streams.runtime.restore import RestorePlan

    async def no_database(timeout_s: float | None) -> None:
        return None

    app = faust_app(Settings(data_dir=tmp_path, database_url=""), partitions=3, closing=NothingToClose(),
                    skipped=no_skipped_batches)  # fmt: skip
    stores = [app.Table(name, default=list).data for name in ("a", "b", "c")]
    assert all(isinstance(store, RestoreStore) for store in stores)
    plan = RestorePlan(Settings(restore_window_s=900), no_database, partitions=3, kept=10)
    begun: set[str] = set()
    everyone = asyncio.Event()

    async def start_offsets(topic: str, partitions: Any) -> dict[int, int]:
        return {p: 0 for p in partitions}

    async def read_tails(
        topic: str, starts: dict[int, int | None], ends_known: Any = None
    ) -> dict[int, list[ChangelogMessage]]:
        begun.add(topic)
        if len(begun) == len(stores):
            everyone.set()
        await everyone.wait()
        return {p: [ChangelogMessage(b'"k"', b"[1]", p, 0)] for p in starts}

    plan.start_offsets, plan.read_tails = start_offsets, read_tails  # type: ignore[method-assign]
    app.restore = plan
    steps: list[str] = []

    async def channels(manager: Any) -> None:
        steps.append("channels")

    async def recovery(*args: Any) -> None:
        steps.append("recovery")

    monkeypatch.setattr(faust_private, "update_table_channels", channels)
    monkeypatch.setattr(type(app.tables), "recovery", property(lambda manager: SimpleNamespace(on_rebalance=recovery)))
    topics = [store.topic for store in stores if isinstance(store, RestoreStore)]
    assigned = {TP(topic, 1) for topic in topics} | {TP("p.drafts", 1)}
    async with asyncio.timeout(5):
        await app.tables.on_rebalance(assigned, set(), assigned)
        await asyncio.gather(*(reading.done() for reading in readings(app.tables.values())))  # Faust's recovery waits
    assert steps == ["channels", "recovery"]  # then Faust's steps, in its order
    assert all(store["k"] == [1] for store in stores)
    assert [store.persisted_offset(TP(topic, 1)) for store, topic in zip(stores, topics, strict=True)
            if isinstance(store, RestoreStore)] == [0, 0, 0]  # fmt: skip


def test_a_verdict_records_restore_keeps_the_window_when_committed_offsets_cannot_be_read(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The drafts' committed offsets only ever move a restore's start later; without them the window's holds."""
    from datetime import UTC, datetime

    from streams.runtime import restore as redelivery_restore
    from streams.runtime.restore import RestorePlan
    from streams.store.restore import Checkpoint

    taken = datetime.now(UTC)

    class Database:
        async def checkpoints_before(self, topics: list[str], before: datetime) -> list[Checkpoint]:
            return [Checkpoint(topics[0], p, 10, taken) for p in (0, 1)]

        async def checkpoints_covering(self, topic: str, committed: dict[int, int]) -> list[Checkpoint]:
            return [Checkpoint(topic, p, 10 + offset, taken, offset) for p, offset in committed.items()]

    async def database(timeout_s: float | None) -> Any:
        return Database()

    checked: list[Checkpoint] = []  # each one checked costs a fetch

    async def starts(committed: Any, topic: str = "p-drift-verdict-records-changelog") -> dict[int, int]:
        plan = RestorePlan(Settings(restore_window_s=900), database, partitions=3, kept=10)
        checked.clear()

        async def valid(topic: str, found: list[Checkpoint]) -> dict[int, int]:
            checked.extend(found)
            return {c.partition: c.end_offset for c in found}

        plan._valid, plan.drafts.committed = valid, committed  # type: ignore[method-assign]
        return await plan.start_offsets(topic, {0, 1})

    async def committed(partitions: Any) -> dict[int, int]:
        return {0: 5}  # p1: nothing committed

    async def unreadable(partitions: Any) -> dict[int, int]:
        raise ConnectionError("coordinator not available")

    async def unanswered(partitions: Any) -> dict[int, int]:
        await asyncio.sleep(3600)
        return {}

    assert asyncio.run(starts(committed)) == {0: 15, 1: 10}
    assert sorted((c.partition, c.source_end) for c in checked) == [(0, 5), (1, None)]  # p0's window: not needed
    assert asyncio.run(starts(committed, "p-drift-pending-attempts-changelog")) == {0: 10, 1: 10}
    assert asyncio.run(starts(unreadable)) == {0: 10, 1: 10}
    assert "committed offsets not read (coordinator not available)" in caplog.text
    monkeypatch.setattr(redelivery_restore, "COMMITTED_WAIT_S", 0.05)
    assert asyncio.run(starts(unanswered)) == {0: 10, 1: 10}  # bounded: Faust's recovery waits for it
    assert "committed offsets not read (TimeoutError)" in caplog.text


def test_the_committed_offsets_read_are_the_worker_groups(tmp_path: Path) -> None:
    from streams.runtime.redelivery import DraftOffsets
    from streams.wire.topics import app_id

    settings = Settings(data_dir=tmp_path, database_url="", topic_prefix="p.")
    app = faust_app(settings, partitions=3, closing=NothingToClose(), skipped=no_skipped_batches)
    assert app.conf.id == app_id(settings)  # Faust's consumer group is its app id

    async def no_consumer(topic: str) -> Any:
        raise AssertionError("not read here")

    assert DraftOffsets(settings, no_consumer).topic == app.settings.topic("drafts")


async def test_a_stop_ends_the_checkpoint_rounds_without_one_more(tmp_path: Path) -> None:
    """The stop wakes the checkpoint task's sleep; it must not run a round then: each took a broker and a database
    round trip on the stop's path, before the worker left its group (0.3 s a table late in a long run)."""
    from streams.runtime.restore import RestorePlan

    async def no_database(timeout_s: float | None) -> None:
        return None

    rounds: list[set[int]] = []
    ticked = asyncio.Event()

    async def record_checkpoints(topic: str, partitions: Any, last: dict[int, int]) -> None:
        rounds.append(set(partitions))
        ticked.set()

    def started_store(interval_s: float) -> RestoreStore:
        app = faust_app(Settings(data_dir=tmp_path, database_url=""), partitions=3, closing=NothingToClose(),
                        skipped=no_skipped_batches)  # fmt: skip
        plan = RestorePlan(Settings(restore_window_s=900, restore_checkpoint_s=interval_s), no_database,
                           partitions=3, kept=10)  # fmt: skip
        plan.record_checkpoints = record_checkpoints  # type: ignore[method-assign]
        app.restore = plan
        store = app.Table("t", default=list).data
        assert isinstance(store, RestoreStore)
        store.active = {0, 2}
        return store

    store = started_store(interval_s=0.01)  # rounds come while it runs ...
    await store.start()
    await ticked.wait()
    await store.stop()
    assert rounds[0] == {0, 2}
    rounds.clear()
    store = started_store(interval_s=60.0)  # ... and none when the stop ends the wait
    await store.start()
    await asyncio.sleep(0)
    await store.stop()
    assert rounds == []
