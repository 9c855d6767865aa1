"""Issue 22 points 1, 2, 5: idle agents and abandoned retries leave a worker's memory, with changelog tombstones.

Time is a fake clock: nothing here sleeps."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import orjson
import pytest

from engine.models import AgentConfig, Event
from engine.settings import Settings
from streams.runtime.eviction import LastSeen, unknown_earlier_attempts
from streams.runtime.history import HistoryView
from streams.runtime.tables import DirectTable
from streams.services.configs import ConfigCache
from streams.services.eviction import Evictor, sweep_and_flush, sweep_interval
from streams.services.stats import GateStats
from streams.wire.payloads import Draft
from streams.worker.metrics import render_prometheus
from tests.streams.fakes import access
from tests.streams.test_tables import FakeTable

Sent = list[tuple[str, bytes, bytes | None, int | None]]
CHECKED = AgentConfig(gate_adherence_enabled=True)


class Clock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class StoredConfigs:
    """The configuration queries of the store over a dict (what a returning agent's configuration is read from)."""

    def __init__(self, rows: dict[str, AgentConfig]) -> None:
        self.rows = rows
        self.asked: list[list[str]] = []

    async def configs_of(self, agent_ids: Any) -> dict[str, AgentConfig]:
        self.asked.append(list(agent_ids))
        return {a: self.rows[a] for a in agent_ids if a in self.rows}

    async def configs_newest(self) -> datetime:
        return datetime(2026, 1, 1, tzinfo=UTC)

    async def configs_changed_since(self, since: Any) -> tuple[list[tuple[str, AgentConfig]], Any]:
        return [], since

    async def ensure_agents(self, agents: Any) -> None:
        return None


def table(sent: Sent, clock: Clock, name: str = "recent-messages") -> DirectTable:
    async def send(topic: str, key: bytes, value: bytes | None, partition: int | None) -> asyncio.Future[object]:
        sent.append((topic, key, value, partition))
        future: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        future.set_result(None)
        return future

    fake = FakeTable()
    fake.name = name
    return DirectTable(fake, send, clock)


def test_last_seen_returns_only_the_keys_idle_beyond_the_ttl_oldest_first() -> None:
    clock = Clock()
    seen = LastSeen(clock)
    for key in ("a", "b", "c"):
        seen.touch(key)
        clock.now += 10
    seen.touch("a")  # a is active again: it moves to the end
    assert seen.idle(15.0) == ["b"]  # b at 1010, c at 1020, a at 1030; now 1030: only b is idle > 15 s
    assert list(seen) == ["c", "a"]
    clock.now += 100
    assert seen.idle(15.0) == ["c", "a"] and len(seen) == 0


def changelog(*records: tuple[str, Any, int]) -> list[Any]:
    """Changelog events as Faust hands them to ``apply_changelog_batch`` (key, value or None, partition)."""
    return [SimpleNamespace(message=SimpleNamespace(key=orjson.dumps(k), value=None if v is None else orjson.dumps(v),
                                                    partition=p)) for k, v, p in records]  # fmt: skip


async def test_expired_table_entries_get_a_tombstone_on_their_owned_partition_only() -> None:
    sent: Sent = []
    clock = Clock()
    pending = table(sent, clock, "pending-attempts")
    pending.at(0)["old-owned"] = [{"attempt": 1}]
    pending._table.apply_changelog_batch(changelog(("old-standby", [{"attempt": 1}], 2)))  # a standby copy
    await pending.flush()
    clock.now += 50
    pending.at(1)["fresh"] = [{"attempt": 1}]
    await pending.flush()
    sent.clear()

    assert pending.expire(40.0, owned={0, 1}) == ["old-owned"]
    await pending.flush()
    assert sent == [("app-recent-messages-changelog", b'"old-owned"', None, 0)]
    assert "old-standby" in pending  # its owner (of partition 2) writes the tombstone ...
    pending._table.apply_changelog_batch(changelog(("old-standby", None, 2)))
    assert list(pending.local) == ["fresh"]  # ... and Faust applies it to the copy


async def test_a_restored_entry_is_dated_at_its_restore_and_tombstoned_on_its_own_partition() -> None:
    sent: Sent = []
    clock = Clock()
    recent = table(sent, clock)
    clock.now += 100
    recent._table.apply_changelog_batch(changelog(("dwight", [{"id": "m1"}], 2), ("gone", None, 1)))
    clock.now += 5
    assert recent.expire(10.0, owned={0, 2}) == []  # dated at the restore, not at the epoch
    clock.now += 10
    assert recent.expire(10.0, owned={0, 2}) == ["dwight"]
    await recent.flush()
    assert [(key, value, p) for _, key, value, p in sent] == [(b'"dwight"', None, 2)]


async def test_an_entry_of_unknown_partition_is_tombstoned_on_every_owned_partition() -> None:
    sent: Sent = []
    clock = Clock()
    recent = table(sent, clock)
    recent.local["stray"] = [{"id": "m1"}]  # in the store by a way the table did not see
    assert recent.adopt() == 1 and recent.adopt() == 0
    clock.now += 11
    assert recent.expire(10.0, owned={0, 2}) == ["stray"]
    await recent.flush()
    assert [(key, value, p) for _, key, value, p in sent] == [(b'"stray"', None, 0), (b'"stray"', None, 2)]


def evictor(clock: Clock, sent: Sent, **settings: float) -> tuple[Evictor, set[str]]:
    stored = StoredConfigs({"jim": CHECKED})
    configs = ConfigCache(access(stored), clock=clock)
    busy: set[str] = set()
    view = HistoryView()
    ev = Evictor(
        Settings(**settings),  # type: ignore[arg-type]
        configs,
        view,
        table(sent, clock),
        table(sent, clock, "pending-attempts"),
        table(sent, clock, "verdict-records"),
        busy=busy.__contains__,
        owned=lambda: {0, 1, 2},
        stats=GateStats(),
        wall_clock=clock,
    )
    return ev, busy


def remember(ev: Evictor, agent_id: str, clock: Clock) -> None:
    """What the gate does for a committed draft: configuration, recent messages, history."""
    ev.configs.get(agent_id)
    ev.recent.at(1)[agent_id] = [{"id": f"{agent_id}-1", "text": "hello", "n": 1}]
    ts = datetime.fromtimestamp(clock.now, UTC)
    ev.view.record(f"{agent_id}-1", None, Event(agent_id, agent_id, "hello", ts=ts))


async def test_an_idle_agent_is_dropped_everywhere_with_a_tombstone_and_comes_back_with_its_stored_config() -> None:
    clock, sent = Clock(), Sent()
    ev, _ = evictor(clock, sent, agent_idle_ttl_s=20.0)
    await ev.configs.ensure(["jim", "pam"])
    for agent_id in ("jim", "pam"):
        remember(ev, agent_id, clock)
    await ev.recent.flush()
    assert ev.configs.get("jim") == CHECKED and ev.agents_in_memory() == 2
    clock.now += 15
    ev.configs.get("pam")  # pam drafts again
    clock.now += 10  # jim idle 25 s > 20 s; pam 10 s
    sent.clear()

    swept = await sweep_and_flush(ev, ev.recent.flush)
    assert swept.agents == ["jim"] and ev.configs.known("jim") is None and "jim" not in ev.recent
    assert ("app-recent-messages-changelog", b'"jim"', None, 1) in sent  # a restore does not bring it back
    assert ev.agents_in_memory() == 1  # pam (jim's history view entry is older than the TTL too)
    assert "jim" not in ev.view.agents()

    await ev.configs.ensure(["jim"])  # jim returns: the stored configuration, not the defaults
    assert ev.configs.get("jim") == CHECKED and ev.recent.get("jim") is None  # and an empty window
    clock.now += 100
    assert ev.agents_in_memory() == 2 and "drift_agents_in_memory 2.0" in render_prometheus(ev.stats)  # jim, pam
    ev.sweep()
    assert ev.agents_in_memory() == 0 and "drift_agents_in_memory 0.0" in render_prometheus(ev.stats)


async def test_an_agent_with_drafts_in_flight_is_never_evicted() -> None:
    clock, sent = Clock(), Sent()
    ev, busy = evictor(clock, sent, agent_idle_ttl_s=20.0)
    remember(ev, "kevin", clock)
    busy.add("kevin")  # a slow judge call: queued longer than the TTL
    clock.now += 60
    assert ev.sweep().agents == [] and "kevin" in ev.recent and ev.configs.known("kevin") is not None
    busy.clear()
    clock.now += 21  # counted as seen when the sweep found it busy
    assert ev.sweep().agents == ["kevin"] and "kevin" not in ev.recent


async def test_restored_recent_entries_count_as_seen_at_the_first_sweep_then_expire() -> None:
    clock, sent = Clock(), Sent()
    ev, _ = evictor(clock, sent, agent_idle_ttl_s=20.0)
    ev.recent.local["dwight"] = [{"id": "d1", "text": "beets", "n": 1}]  # restored from the changelog
    ev.sweep()
    assert ev.agents_in_memory() == 1
    clock.now += 21
    assert ev.sweep().agents == ["dwight"] and ev.agents_in_memory() == 0


async def test_pending_attempts_and_verdict_records_expire_after_the_pending_ttl() -> None:
    clock, sent = Clock(), Sent()
    ev, _ = evictor(clock, sent, pending_ttl_s=60.0)
    ev.pending.at(0)["d1"] = [{"attempt": 1, "text": "first", "total_score": 3.0}]
    ev.verdicts.at(0)["d1"] = {"1": {"verdict": {}, "at": "2026-01-01T00:00:00Z"}}
    clock.now += 30
    ev.pending.at(0)["d2"] = [{"attempt": 1, "text": "other", "total_score": 3.0}]
    ev.sweep()
    assert ev.pending_attempts() == 2
    clock.now += 31
    sent.clear()
    swept = await sweep_and_flush(ev, ev.pending.flush)
    assert swept.tables == {"pending": ["d1"], "verdicts": ["d1"]}
    assert ev.pending_attempts() == 1 and "d1" not in ev.verdicts
    assert (b'"d1"', None, 0) in [(k, v, p) for _, k, v, p in sent]

    late = Draft(draft_id="d1", agent_id="jim", text="third try", attempt=3)
    assert unknown_earlier_attempts(ev.pending, late) == 2  # the verdict says the gate no longer knew them
    known = Draft(draft_id="d2", agent_id="jim", text="second try", attempt=2)
    assert unknown_earlier_attempts(ev.pending, known) == 0


def test_the_sweep_interval_is_a_quarter_of_the_shorter_ttl_within_bounds() -> None:
    assert sweep_interval(Settings(agent_idle_ttl_s=2.0)) == 0.5
    assert sweep_interval(Settings()) == 10.0
    assert sweep_interval(Settings(agent_idle_ttl_s=1.0, pending_ttl_s=1.0)) == 0.25


def test_history_view_drops_agents_and_channels_by_event_time() -> None:
    view = HistoryView()
    old, new = datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 2, tzinfo=UTC)
    view.record("m1", "r1", Event("jim", "Jim", "old news", channel="office", ts=old))
    view.record("m2", "r1", Event("pam", "Pam", "new news", channel="desk", ts=new))
    assert view.drop_idle((old.timestamp() + new.timestamp()) / 2) == 1
    assert view.agents() == {"pam"}
    assert view.trajectory("r1", "office", ["jim"]) == [] and len(view.trajectory("r1", "desk", ["pam"])) == 1


def test_a_verdict_payload_with_unknown_earlier_attempts_validates() -> None:
    from streams.wire.payloads import Verdict

    body = {"draft_id": "d", "attempt": 3, "agent_id": "a", "decision": "commit", "outcome": "passed", "text": "t"}
    verdict = Verdict.model_validate_json(orjson.dumps({**body, "unknown_earlier_attempts": 2}))
    assert verdict.unknown_earlier_attempts == 2


async def test_a_configuration_lookup_reads_the_store_without_holding_the_agent() -> None:
    clock, sent = Clock(), Sent()
    ev, _ = evictor(clock, sent)
    assert await ev.configs.lookup("jim") == CHECKED  # what /configs/jim shows for an evicted or unseen agent
    assert ev.configs.known("jim") is None and ev.agents_in_memory() == 0
    assert await ev.configs.lookup("nobody") is None


def test_a_history_view_with_a_max_age_does_not_record_a_replay_of_old_events() -> None:
    view = HistoryView(max_age_s=60.0)
    old = datetime.fromtimestamp(time.time() - 3600, UTC)
    assert not view.record("m1", None, Event("jim", "Jim", "an hour ago", ts=old))
    assert view.record("m2", None, Event("pam", "Pam", "just now", ts=datetime.now(UTC)))
    assert view.agents() == {"pam"}


def test_the_output_partition_memo_does_not_grow_with_every_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    from streams.runtime import output

    monkeypatch.setattr(output, "PARTITION_MEMO", 100)
    out = output.Output(Settings())
    chosen = [out._choose("verdicts", f"agent-{i}".encode(), {0, 1, 2}) for i in range(1000)]
    assert len(out._partitions) <= 100  # it held one entry per agent and topic, forever
    assert chosen == [out._choose("verdicts", f"agent-{i}".encode(), {0, 1, 2}) for i in range(1000)]


async def test_a_configuration_published_on_the_topic_only_is_kept_and_goes_with_the_agent() -> None:
    clock, sent = Clock(), Sent()
    ev, _ = evictor(clock, sent, agent_idle_ttl_s=20.0)
    session = AgentConfig(gate_fluency_enabled=True)
    ev.configs.apply("run1.jim", session)  # the simulation runner publishes it before the agent's first draft
    clock.now += 10
    await ev.configs.ensure(["run1.jim"])
    assert ev.configs.get("run1.jim") == session and ev.agents_in_memory() == 1
    clock.now += 21
    assert ev.sweep().agents == ["run1.jim"] and ev.configs.known("run1.jim") is None
