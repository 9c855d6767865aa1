"""A worker killed without a word is found through PostgreSQL and ended on the broker at once, and a worker that
joins or stops tells the others, which rejoin at once (streams/worker/peers.py): the registrations and the news on
the real database, the LeaveGroup and the early heartbeat on the real broker."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer

from streams.runtime import faust_private
from streams.store import Store
from streams.store.peers import CHANGED, JOINING, PeerLock, announce_join, claimed_elsewhere
from streams.worker.claims import PartitionClaims
from streams.worker.peers import PeerWatch
from tests.stack import Scenario, Stack, eventually

pytestmark = pytest.mark.e2e


class Ends:
    """A fake broker side for the sweeps: records the members asked for; ``answers`` says what each try returns."""

    def __init__(self, *answers: bool) -> None:
        self.asked: list[str] = []
        self.answers = list(answers)

    async def __call__(self, member_id: str) -> bool:
        self.asked.append(member_id)
        return self.answers.pop(0) if self.answers else True


@pytest.fixture
async def group(stack: Stack) -> AsyncIterator[str]:
    name = f"g{uuid.uuid4().hex[:8]}"
    yield name
    async with await Store.connect(stack.database.url) as store:
        await store.pool.execute("DELETE FROM group_members WHERE group_id = $1", name)


async def _hold(stack: Stack, group: str, member: str) -> PeerLock:
    return await PeerLock.hold(stack.database.url, uuid.uuid4().hex, group, member)


async def _swept(lock: PeerLock, ends: Ends, timeout_s: float = 10.0) -> list[str]:
    """The first sweep that ends someone (a killed backend frees its lock a moment after its socket closes)."""
    found: list[str] = []

    async def sweep() -> bool:
        found.extend(await lock.sweep(0.0, ends))
        return bool(found)

    await eventually(sweep, timeout_s, interval_s=0.05)
    return found


async def test_a_killed_peer_is_ended_once_and_a_live_one_never(stack: Stack, group: str) -> None:
    watcher, live, dead = [await _hold(stack, group, m) for m in ("m-watcher", "m-live", "m-dead")]
    try:
        ends = Ends()
        assert await watcher.sweep(0.0, ends) == [] and ends.asked == []  # every lock is held
        await dead.member("m-dead-2")  # a new member id after the broker forgot the old one
        dead.connection.terminate()  # what PostgreSQL sees of a SIGKILL: the socket closes
        assert await _swept(watcher, ends) == ["m-dead-2"]
        assert await watcher.sweep(0.0, ends) == [] and ends.asked == ["m-dead-2"]  # its row went
        assert await live.sweep(0.0, ends) == []  # another sweeper finds nothing either
    finally:
        for lock in (watcher, live):
            await lock.close()


async def test_partition_claims_count_while_their_worker_holds_its_lock(stack: Stack, group: str) -> None:
    """What a new owner waits for (streams.worker.claims): another live worker's claim, not its own, not a
    released one, not a killed worker's; a sweep clears the killed worker's claims."""
    owner, taker = [await _hold(stack, group, m) for m in ("m-owner", "m-taker")]
    try:
        await owner.claim(["drafts:0", "drafts:1"])
        await taker.claim(["drafts:2"])
        assert await claimed_elsewhere(taker.connection, group, taker.token, ["drafts:1", "drafts:2"]) == {"drafts:1"}
        await owner.claim(["drafts:0"])  # drained: partition 1 released
        assert await claimed_elsewhere(taker.connection, group, taker.token, ["drafts:1"]) == set()
        owner.connection.terminate()  # killed while it claims partition 0

        async def unclaimed() -> bool:
            return await claimed_elsewhere(taker.connection, group, taker.token, ["drafts:0"]) == set()

        assert await eventually(unclaimed, 10, interval_s=0.05)
        await taker.sweep(0.0, Ends())
        async with await Store.connect(stack.database.url) as store:
            rows = await store.pool.fetch("SELECT token FROM group_claims WHERE group_id = $1", group)
        assert [row["token"] for row in rows] == [taker.token]
    finally:
        await taker.close()


async def test_a_new_owner_on_the_consumer_thread_waits_for_the_old_owners_release(stack: Stack, group: str) -> None:
    """streams.worker.claims from another thread's event loop, as the coordinator calls it: the claim is written on
    the worker's connection, and the wait for a partition another live worker claims ends at its release."""
    owner, taker = [await _hold(stack, group, m) for m in ("m-owner", "m-taker")]
    watch = SimpleNamespace(lock=taker, busy=asyncio.Lock(), token=taker.token, group_id=lambda: group,
                            settings=SimpleNamespace(database=lambda: stack.database.url))  # fmt: skip
    watch.held_lock = lambda: watch.lock  # the registration's lock (PeerWatch.held_lock)
    claims = PartitionClaims(watch, asyncio.get_running_loop())  # type: ignore[arg-type]
    gets = frozenset({"drafts:1", "drafts:2"})

    def consumer_thread() -> float:
        async def join_end() -> float:
            assert await claims.claim(gets)
            started = time.monotonic()
            await claims.released(gets)
            return time.monotonic() - started

        return asyncio.run(join_end())

    try:
        await owner.claim(["drafts:0", "drafts:1"])
        waiting = asyncio.ensure_future(asyncio.to_thread(consumer_thread))
        await asyncio.sleep(0.5)  # the old owner drains partition 1 meanwhile
        assert not waiting.done()
        await owner.claim(["drafts:0"])
        assert 0.4 < await asyncio.wait_for(waiting, 10) < 5
        assert claims.holds(gets)
        assert await claimed_elsewhere(owner.connection, group, owner.token, ["drafts:1", "drafts:2"]) == set(gets)
    finally:
        for lock in (owner, taker):
            await lock.close()


async def test_a_claim_asked_for_before_the_worker_registered_is_written_once_it_has(stack: Stack, group: str) -> None:
    """A worker's first join ends before it holds its lock: its claim is written when it registers, unless a later
    join's claim was written first (the registration's is then older, and dropped)."""
    lock = await _hold(stack, group, "m-new")
    other = await _hold(stack, group, "m-other")
    watch = SimpleNamespace(lock=None, busy=asyncio.Lock(), token=lock.token, group_id=lambda: group)
    watch.held_lock = lambda: watch.lock  # the registration's lock (PeerWatch.held_lock)
    claims = PartitionClaims(watch, asyncio.get_running_loop())  # type: ignore[arg-type]
    try:
        assert not await claims.claim(frozenset({"drafts:0"}))  # not registered yet: nothing written
        assert await claimed_elsewhere(other.connection, group, other.token, ["drafts:0"]) == set()
        watch.lock = lock
        assert await claims.claim_again()
        assert claims.holds(frozenset({"drafts:0"}))
        assert await claimed_elsewhere(other.connection, group, other.token, ["drafts:0"]) == {"drafts:0"}
        assert await claims.claim(frozenset({"drafts:1"}))  # the next join's claim
        assert not await claims._write(frozenset({"drafts:0"}), 1)  # an older one that lands after it: dropped
        assert await claimed_elsewhere(other.connection, group, other.token, ["drafts:0", "drafts:1"]) == {"drafts:1"}
    finally:
        for held in (lock, other):
            await held.close()


async def test_two_workers_sweeping_at_once_end_a_dead_one_once(stack: Stack, group: str) -> None:
    first, second, dead = [await _hold(stack, group, m) for m in ("m-first", "m-second", "m-dead")]
    try:
        dead.connection.terminate()
        ends = Ends()

        async def slow(member_id: str) -> bool:  # the broker takes its time: both sweeps overlap
            await asyncio.sleep(0.3)
            return await ends(member_id)

        async def both() -> bool:
            found = await asyncio.gather(first.sweep(0.0, slow), second.sweep(0.0, slow))
            return any(found)

        assert await eventually(both, 10, interval_s=0.05)
        assert ends.asked == ["m-dead"]
    finally:
        for lock in (first, second):
            await lock.close()


async def test_an_orderly_stop_is_never_ended_and_other_groups_are_left_alone(stack: Stack, group: str) -> None:
    watcher, leaving = await _hold(stack, group, "m-watcher"), await _hold(stack, group, "m-leaving")
    stranger = await _hold(stack, f"{group}-other", "m-stranger")
    try:
        await leaving.unregister()  # a worker's orderly stop: its row goes, then (once it left) its connection
        await leaving.close()
        stranger.connection.terminate()
        ends = Ends()
        await asyncio.sleep(0.5)  # time for the killed backend to go: nothing to find must stay nothing
        assert await watcher.sweep(0.0, ends) == [] and ends.asked == []
    finally:
        await watcher.close()
        async with await Store.connect(stack.database.url) as store:
            await store.pool.execute("DELETE FROM group_members WHERE group_id = $1", f"{group}-other")


async def test_a_member_the_broker_cannot_end_now_is_tried_again(stack: Stack, group: str) -> None:
    watcher, dead = await _hold(stack, group, "m-watcher"), await _hold(stack, group, "m-dead")
    try:
        dead.connection.terminate()
        ends = Ends(False)  # the first try: the group is rebalancing
        await eventually(lambda: _asked(watcher, ends), 10, interval_s=0.05)
        assert ends.asked == ["m-dead"]
        assert await watcher.sweep(0.0, ends) == ["m-dead"] and ends.asked == ["m-dead", "m-dead"]
    finally:
        await watcher.close()


async def _asked(lock: PeerLock, ends: Ends) -> bool:
    await lock.sweep(0.0, ends)
    return bool(ends.asked)


async def test_no_peer_is_ended_before_the_sweeper_held_its_lock_for_the_grace(stack: Stack, group: str) -> None:
    """A restarted PostgreSQL frees every lock while the workers live: they have the grace to take them again."""
    watcher, dead = await _hold(stack, group, "m-watcher"), await _hold(stack, group, "m-dead")
    try:
        dead.connection.terminate()
        await asyncio.sleep(0.5)
        ends = Ends()
        assert await watcher.sweep(3600.0, ends) == [] and ends.asked == []  # held for less than an hour
        assert await _swept(watcher, ends) == ["m-dead"]  # no grace: found
    finally:
        await watcher.close()


# -- on the broker ---------------------------------------------------------------------------------------------

#: the broker's join phase is half the session: a member ended by LeaveGroup is replaced after about 3 s, one
#: whose session runs out after 6 s + 3 s; owning every partition within the session tells the two apart
SESSION_MS = 6000
MEMBER = """
import asyncio, sys
from aiokafka import AIOKafkaConsumer
async def main(broker, topic, group):
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=broker, group_id=group, enable_auto_commit=False,
                                session_timeout_ms=6000, heartbeat_interval_ms=500, rebalance_timeout_ms=6000)
    await consumer.start()
    while not consumer.assignment():
        await consumer.getmany(timeout_ms=100)
    print(consumer._coordinator.member_id, flush=True)
    while True:
        await consumer.getmany(timeout_ms=100)
asyncio.run(main(*sys.argv[1:]))
"""


async def test_the_broker_ends_a_killed_member_at_once(scenario: Scenario) -> None:
    """A member killed with SIGKILL, ended by the survivor's LeaveGroup: the group rebalances at once (not after
    the session) and the survivor, asked to rejoin, owns every partition again."""
    await scenario.create_topics()
    topic, group = scenario.settings.topic("drafts"), f"{scenario.prefix}peers"
    survivor = _group_member(scenario, group, heartbeat_ms=500)
    await survivor.start()
    survivor.subscribe([topic])
    polling = asyncio.ensure_future(_poll(survivor))
    member = subprocess.Popen([sys.executable, "-c", MEMBER, scenario.stack.broker.bootstrap, topic, group],
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert member.stdout is not None
        member_id = (await asyncio.to_thread(member.stdout.readline)).strip()
        assert member_id and await eventually(lambda: _owns(survivor, lambda n: 0 < n < 3), 30)
        killed = time.monotonic()
        os.kill(member.pid, signal.SIGKILL)
        assert await faust_private.end_member(survivor, member_id, formed_first=True)
        assert await eventually(lambda: _owns(survivor, lambda n: n == 3), 30)
        assert time.monotonic() - killed < SESSION_MS / 1000, "ended by its session running out, not by the leave"
    finally:
        member.kill()
        member.wait()
        polling.cancel()
        await survivor.stop()


async def _poll(consumer: AIOKafkaConsumer) -> None:
    while True:
        await consumer.getmany(timeout_ms=100)


async def _owns(consumer: AIOKafkaConsumer, count: Any) -> bool:
    return bool(count(len(consumer.assignment())))


# -- the worker's watch, on the real database, with a fake consumer ---------------------------------------------


@dataclass
class FakeThread:
    """Faust's consumer thread as the watch reaches it: its aiokafka consumer and ``call_thread``."""

    group: str
    member: str
    ended: list[str] = field(default_factory=list)
    rebalancing: list[bool | None] = field(default_factory=list)  # rejoin_if_rebalancing's answers, in turn
    nudges: int = 0
    rejoins: int = 0  # rejoin_now

    def __post_init__(self) -> None:
        coordinator = SimpleNamespace(group_id=self.group, member_id=self.member)
        self._consumer = SimpleNamespace(_coordinator=coordinator)

    async def call_thread(self, call: Any, consumer: Any, *args: Any) -> Any:
        assert consumer is self._consumer
        if call is faust_private.rejoin_if_rebalancing:
            self.nudges += 1
            return self.rebalancing.pop(0) if self.rebalancing else False
        if call is faust_private.rejoin_now:
            self.rejoins += 1
            return True
        self.ended.append(args[0])  # end_member's member id
        return True


async def _member_rows(stack: Stack, group: str) -> list[Any]:
    async with await Store.connect(stack.database.url) as store:
        return list(await store.pool.fetch("SELECT token, member_id FROM group_members WHERE group_id = $1", group))


async def _terminate(stack: Stack, lock: PeerLock) -> None:
    async with await Store.connect(stack.database.url) as store:
        await store.pool.execute("SELECT pg_terminate_backend($1)", lock.connection.get_server_pid())


async def test_the_watch_registers_survives_a_lost_connection_ends_the_dead_and_leaves_in_order(
    stack: Stack, group: str, caplog: pytest.LogCaptureFixture
) -> None:
    thread = FakeThread(group, "m-watch")
    app = SimpleNamespace(consumer=SimpleNamespace(_thread=thread))
    ready = asyncio.Event()
    ready.set()
    watch = PeerWatch(stack.settings("peers.", group_session_timeout_s=1.0), app, ready)
    task = asyncio.ensure_future(watch.run())
    try:
        assert await eventually(lambda: _member_rows(stack, group), 10)  # registered once it had a member id
        first = watch.lock
        assert first is not None
        await _terminate(stack, first)  # the database drops the watch's connection (as an outage does)

        def said() -> list[str]:
            return [r.getMessage() for r in caplog.records if "peer watch" in r.getMessage()]

        async def again() -> bool:  # registered again: said once its new connection listens, after the lock is set
            return any("registered again" in message for message in said())

        assert await eventually(again, 15)
        assert watch.lock is not first and watch.lock is not None and not watch.lock.connection.is_closed()
        messages = said()  # once each, not once a second
        assert len(messages) == 2 and "away" in messages[0] and "registered again" in messages[1], messages
        dead = await _hold(stack, group, "m-dead")
        dead.connection.terminate()
        assert await eventually(lambda: _ended(watch), 15)  # after its grace (1 s) since it held its lock again
        assert thread.ended == ["m-dead"]
        await watch.stopping()
        assert await _member_rows(stack, group) == []  # an orderly stop deletes its row: nobody ends it
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def _ended(watch: PeerWatch) -> bool:
    return watch.ended > 0


# -- the group's news ----------------------------------------------------------------------------------------


async def test_news_reaches_the_other_workers_of_the_group_only(stack: Stack, group: str) -> None:
    heard: dict[str, list[str]] = {"sender": [], "peer": [], "stranger": []}
    sender, peer = await _hold(stack, group, "m-sender"), await _hold(stack, group, "m-peer")
    stranger = await _hold(stack, f"{group}-other", "m-stranger")
    tasks: list[asyncio.Future[None]] = []

    def rejoins(name: str, lock: PeerLock, kind: str, token: str) -> None:
        heard[name].append(kind)
        if kind == JOINING:  # as a worker does: it rejoins, and says so
            tasks.append(asyncio.ensure_future(lock.announce(CHANGED)))

    try:
        for name, lock in (("sender", sender), ("peer", peer), ("stranger", stranger)):
            await lock.listen(functools.partial(rejoins, name, lock))
        await sender.announce()
        assert await eventually(lambda: _heard(heard, "peer", 1), 5)
        # a worker about to join, not registered yet: both live peers said they rejoin before its wait ended
        assert await announce_join(stack.database.url, uuid.uuid4().hex, group, 30.0) == 2
        await peer.announce()  # a round trip after the others: every notification before it has arrived
        assert await eventually(lambda: _heard(heard, "sender", 3), 5)
        assert heard == {"sender": [JOINING, CHANGED, CHANGED], "peer": [CHANGED, JOINING, CHANGED], "stranger": []}
    finally:
        await asyncio.gather(*tasks)
        for lock in (sender, peer, stranger):
            await lock.close()
        async with await Store.connect(stack.database.url) as store:
            await store.pool.execute("DELETE FROM group_members WHERE group_id = $1", f"{group}-other")


async def _heard(heard: dict[str, list[str]], name: str, times: int) -> bool:
    return len(heard[name]) >= times


async def test_a_join_waits_for_no_one_in_a_group_without_live_workers(stack: Stack, group: str) -> None:
    dead = await _hold(stack, group, "m-dead")
    dead.connection.terminate()  # its row stays until swept, its lock goes
    started = time.monotonic()

    async def alone() -> bool:
        return await announce_join(stack.database.url, uuid.uuid4().hex, group, 30.0) == 0

    assert await eventually(alone, 10, interval_s=0.05)
    assert time.monotonic() - started < 10.0  # not the 30 s it would wait for a live peer


async def test_the_watch_rejoins_at_a_join_and_asks_its_consumer_at_other_news(stack: Stack, group: str) -> None:
    ready = asyncio.Event()
    ready.set()
    threads = [FakeThread(group, "m-one", rebalancing=[False, False, True]), FakeThread(group, "m-two")]
    watches = [PeerWatch(stack.settings("peers."), SimpleNamespace(consumer=SimpleNamespace(_thread=thread)), ready)
               for thread in threads]  # fmt: skip
    tasks = [asyncio.ensure_future(watch.run()) for watch in watches]
    try:
        assert await eventually(lambda: _count_rows(stack, group, 2), 10)
        await watches[1].rebalancing()  # its first join: the first worker rejoins at once
        assert await eventually(lambda: _rejoined(watches[0], 1), 5)
        assert (threads[0].rejoins, threads[0].nudges) == (1, 0)
        await watches[1].rebalancing()  # a later rebalance: the first asks the broker until it says so
        assert await eventually(lambda: _rejoined(watches[0], 2), 5)
        assert threads[0].nudges == 3 and (threads[1].nudges, threads[1].rejoins) == (0, 0)  # never its own news
        threads[0].rebalancing = [None]  # joining already: one look, then nothing
        await watches[1].stopping()  # an orderly stop is news too
        assert await eventually(lambda: _nudged(threads[0], 4), 5)
        assert watches[0].rejoined == 2
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def test_a_stopping_follower_hears_that_its_leader_stops_too(stack: Stack, group: str) -> None:
    """The leader's stop is news of its own kind, and a follower whose own stop began first still hears it (its
    connection stays open until its consumer has left): its consumer then leaves after the leader's. Once the
    follower is in a later generation, that leader is gone: the news no longer counts."""
    ready = asyncio.Event()
    ready.set()
    threads = [FakeThread(group, "m-leader"), FakeThread(group, "m-follower")]
    threads[0]._consumer._coordinator._group_subscription = {"drafts"}  # elected leader at its latest join
    for thread in threads:
        thread._consumer._coordinator.generation = 3
    two = SimpleNamespace(changelog_distribution={"http://w1": {}, "http://w2": {}})  # the latest assignment
    apps = [SimpleNamespace(consumer=SimpleNamespace(_thread=thread), assignor=two) for thread in threads]
    leader, follower = watches = [PeerWatch(stack.settings("peers."), app, ready) for app in apps]
    tasks = [asyncio.ensure_future(watch.run()) for watch in watches]
    try:
        assert await eventually(lambda: _count_rows(stack, group, 2), 10)
        await follower.stopping()
        assert await _member_rows(stack, group) != [] and not follower.leader_stopping()
        await leader.stopping()

        async def heard() -> bool:
            return follower.leader_stopping()

        assert await eventually(heard, 5)
        assert not leader.leader_stopping()  # a follower's stop is other news
        threads[1]._consumer._coordinator.generation = 4  # the follower rejoined without that leader
        assert not follower.leader_stopping()
        assert await _member_rows(stack, group) == []
        await follower.stopped()
        assert follower.lock is not None and follower.lock.connection.is_closed()
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for watch in watches:
            await watch.stopped()


async def _count_rows(stack: Stack, group: str, count: int) -> bool:
    return len(await _member_rows(stack, group)) == count


async def _rejoined(watch: PeerWatch, times: int) -> bool:
    return watch.rejoined >= times


async def _nudged(thread: FakeThread, times: int) -> bool:
    return thread.nudges >= times


async def test_an_early_heartbeat_rejoins_a_stable_member_when_another_joins(scenario: Scenario) -> None:
    """On the real broker: a member of a formed group is told "stable" before a join and "rebalancing" once the
    join has begun, long before its own heartbeat (every 5 s here) would tell it; it rejoins and shares."""
    topic, members = await _two_members(scenario, "news", heartbeat_ms=5000)
    first, second = members
    polls: list[asyncio.Future[None]] = []
    try:
        await first.start()
        first.subscribe([topic])
        polls.append(asyncio.ensure_future(_poll(first)))
        assert await eventually(lambda: _owns(first, lambda n: n == 3), 30)
        assert await faust_private.rejoin_if_rebalancing(first) is False  # formed: nothing to do
        joined = time.monotonic()
        await second.start()
        second.subscribe([topic])
        polls.append(asyncio.ensure_future(_poll(second)))

        async def rejoined() -> bool:
            return bool(await faust_private.rejoin_if_rebalancing(first))

        assert await eventually(rejoined, 4, interval_s=0.05)
        assert time.monotonic() - joined < 4.0  # its own next heartbeat was 5 s after its join
        assert await eventually(lambda: _owns(first, lambda n: 0 < n < 3), 30)
        assert await eventually(lambda: _owns(second, lambda n: 0 < n < 3), 30)
    finally:
        for poll in polls:
            poll.cancel()
        for member in members:
            await member.stop()


async def test_a_stopping_member_does_not_rejoin_when_its_heartbeat_finds_a_rebalance(
    scenario: Scenario, caplog: pytest.LogCaptureFixture
) -> None:
    """On the real broker: once its worker stops (stop_rejoining), a member whose heartbeat finds the group
    rebalancing (the other member left) does not rejoin, which on this broker would hold its stop for the 3 s join
    phase; its own stop then ends its membership."""
    topic, members = await _two_members(scenario, "stopping", heartbeat_ms=300)
    stopping, other = members
    polls: list[asyncio.Future[None]] = []
    try:
        for member in members:
            await member.start()
            member.subscribe([topic])
            polls.append(asyncio.ensure_future(_poll(member)))
        assert await eventually(lambda: _owns(stopping, lambda n: 0 < n < 3), 30)
        assert faust_private.stop_rejoining(stopping)
        with caplog.at_level(logging.INFO, logger="aiokafka.consumer.group_coordinator"):
            await other.stop()  # its LeaveGroup: the group rebalances

            async def heard() -> bool:
                return "because it is rebalancing" in caplog.text

            assert await eventually(heard, 10, interval_s=0.01)
            rejoin_asked = stopping._coordinator._rejoin_needed_fut.done()
            polls[0].cancel()
            await stopping.stop()
        assert not rejoin_asked and "(Re-)joining group" not in caplog.text
    finally:
        for poll in polls:
            poll.cancel()
        for member in members:
            await member.stop()


async def _two_members(scenario: Scenario, name: str, *, heartbeat_ms: int) -> tuple[str, list[AIOKafkaConsumer]]:
    """The drafts topic and two bare members of group ``name`` (not started)."""
    await scenario.create_topics()
    group = f"{scenario.prefix}{name}"
    members = [_group_member(scenario, group, heartbeat_ms=heartbeat_ms) for _ in range(2)]
    return scenario.settings.topic("drafts"), members


def _group_member(scenario: Scenario, group: str, *, heartbeat_ms: int) -> AIOKafkaConsumer:
    return AIOKafkaConsumer(bootstrap_servers=scenario.stack.broker.bootstrap, group_id=group,
                            session_timeout_ms=SESSION_MS, heartbeat_interval_ms=heartbeat_ms,
                            rebalance_timeout_ms=SESSION_MS, enable_auto_commit=False)  # fmt: skip
