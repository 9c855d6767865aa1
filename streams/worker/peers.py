"""A worker that dies without a word hands its partitions over at once, not after its session timeout.

A worker killed (SIGKILL, the OOM killer, a crash) sends no LeaveGroup: the broker notices only when its session
times out, and on the embedded broker the rebalance that follows holds its join phase open for half a session
more, so the dead worker's partitions waited about 9.3 s with the default 6 s session (a bare aiokafka group,
docs/operations.md). PostgreSQL notices a dead process at once: its socket closes with it. So every worker of
the gate registers its group member in the database on a connection of its own, holding an advisory lock
(:class:`streams.store.peers.PeerLock`), and every half second looks for registrations whose lock is free. For
each, it sends LeaveGroup for the dead member on the broker (:func:`streams.runtime.faust_private.end_member`) and
rejoins at once: the bare group's 9.3 s became 4.3 s.

Beside the verdict path: a sweep is a query or two on the worker's own connection, and a database that is away
only means the session timeout applies, as before. A worker sweeps only once it has held its lock for a session
timeout, so an outage of PostgreSQL, which frees every lock at once, ends no live worker that takes its lock
again within that time.

The same connection carries the group's news. A worker that is about to join its group (at its first
rebalance), stops, or ended a dead member announces it; the others of its group, instead of learning of the
rebalance at their next heartbeat (up to ``DRIFT_GROUP_HEARTBEAT_S`` later), send that heartbeat at once and every
:data:`NUDGE_EVERY_S` for :data:`NUDGE_S` until the broker says the group is rebalancing, and rejoin then
(:func:`streams.runtime.faust_private.rejoin_if_rebalancing`: what their own heartbeat would do, sooner). On the
embedded broker that matters twice: a joiner's partitions come at the first whole second after every member's
join phase ended, so a member that rejoined more than a second after the joiner cost everyone one more second.

What it cannot see: a host that is lost or cut off closes no socket, so the session timeout ends its worker, as
before. A worker whose own database connection drops while it lives is ended as a dead one would be (one more
rebalance: it rejoins at its next heartbeat). Off with static membership (``DRIFT_GROUP_INSTANCE_ID``): a static
member restarted within its session keeps its partitions, and ending it would undo that.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
import uuid
from collections.abc import Coroutine
from typing import Any, Protocol

from engine.settings import Settings
from streams.runtime import faust_private
from streams.runtime.transport import members_seen
from streams.store.errors import classify
from streams.store.peers import CHANGED, JOINING, LEADER_STOPS, PeerLock, announce_join

log = logging.getLogger(__name__)

#: How often a worker looks for departed peers: the most a dead worker's partitions wait for the look.
SWEEP_S = 0.5
#: How often a worker tries to register again while the database is away.
RECONNECT_S = 1.0
#: How long a sweep waits for the consumer thread to end one member on the broker.
END_BOUND_S = 5.0
#: How long an orderly stop may spend deleting its registration before it goes on without.
RELEASE_BOUND_S = 2.0
#: After a peer's news, how long and how often a worker asks the broker whether its group is rebalancing (a
#: stopping worker announces before its consumer leaves, about a second later).
NUDGE_S = 3.0
NUDGE_EVERY_S = 0.1
#: How long an announcement may take before it is dropped (the peers' heartbeats tell them anyway).
ANNOUNCE_BOUND_S = 2.0
#: How long a worker's first JoinGroup waits for its live peers to rejoin first.
JOIN_WAIT_S = 1.0
#: How long the news that the group's leader stops counts, if this worker's generation has not changed since: a
#: follower whose own stop began within it leaves after the leader (faust_private.leave_group_unless_leader).
LEADER_STOP_NEWS_S = 10.0


class Reclaims(Protocol):
    async def claim_again(self) -> bool: ...


class PeerWatch:
    """The registration of one worker and its look for departed peers (:meth:`run`, a supervised worker task;
    :meth:`stopping`, the first step of an orderly stop)."""

    def __init__(self, settings: Settings, app: Any, ready: asyncio.Event) -> None:
        self.settings = settings
        self.app = app
        self.ready = ready  # the worker's store is open (its migrations applied)
        self.token = uuid.uuid4().hex
        self.lock: PeerLock | None = None
        self.ended = 0  # departed members this worker ended (tests, logs)
        self.rejoined = 0  # rebalances this worker joined at a peer's news, before its heartbeat said so
        self._nudge_until = 0.0
        self._joined = False  # its first join was announced
        self._nudging: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()  # the nudge, rejoins and announcements in flight
        self._stopping = False
        self._busy = asyncio.Lock()  # one operation at a time on the connection: a sweep or the release
        self._away = False  # the database went away (said once) and the worker is not registered again yet
        self._leader_stops: tuple[float, int | None] | None = None  # when the leader said it stops, at which generation
        self.claims: Reclaims | None = None  # its partition claims (streams.worker.claims)

    @property
    def enabled(self) -> bool:
        return not self.settings.group_instance_id

    @property
    def busy(self) -> asyncio.Lock:
        """Held for each operation on the connection (one at a time)."""
        return self._busy

    def held_lock(self) -> PeerLock | None:
        """The registration's lock while its connection is open (None: not registered yet, or the database away)."""
        lock = self.lock
        return lock if lock is not None and not lock.connection.is_closed() else None

    def group_id(self) -> str | None:
        return faust_private.group_of(self._consumer())

    def _consumer(self) -> Any:
        return faust_private.kafka_consumer(self._thread())

    def _member(self) -> tuple[str, str] | None:
        return faust_private.group_member(self._consumer())

    def _thread(self) -> Any:
        return faust_private.consumer_thread(self.app.consumer)

    async def run(self) -> None:
        """Register once the worker's store is open and the worker has a member id, then sweep every
        :data:`SWEEP_S` until the worker stops. While the database is away, it says so once and tries again every
        :data:`RECONNECT_S` with the same token; anything else raises (the supervisor logs and restarts it)."""
        await self.ready.wait()
        while not self._stopping and (joined := self._member()) is None:
            await asyncio.sleep(SWEEP_S)
        while not self._stopping and joined is not None:
            try:
                await self._hold_and_sweep(self._member() or joined)
            except Exception as exc:
                if classify(exc) != "transient":
                    raise
                if not self._away:
                    log.warning("peer watch: the database is away (%s: %s); until it is back, a killed worker is "
                                "noticed when its session runs out", type(exc).__name__, exc)  # fmt: skip
                self._away = True
                await asyncio.sleep(RECONNECT_S)

    async def _hold_and_sweep(self, joined: tuple[str, str]) -> None:
        self.lock = lock = await PeerLock.hold(self.settings.database(), self.token, *joined)
        await lock.listen(self._heard)
        if self.claims is not None:  # what its latest join's end asked to claim, written now that it may
            await self.claims.claim_again()
        if self._away:
            self._away = False
            log.warning("peer watch: the database is back, this worker is registered again")
        try:
            while not self._stopping:
                async with self._busy:
                    if not self._stopping:
                        await self._sweep(lock)
                await asyncio.sleep(SWEEP_S)
        finally:
            if not self._stopping:  # an orderly stop releases it (stopping)
                await lock.close()

    async def _sweep(self, lock: PeerLock) -> None:
        if (member := self._member()) is not None:
            await lock.member(member[1])
        ended = await lock.sweep(self.settings.group_session_timeout_s, self._end)
        if ended:
            await lock.announce()  # the other survivors rejoin now too
        for member_id in ended:
            self.ended += 1
            log.warning("a worker of this group is gone without leaving (its database connection closed): ended its "
                        "group member %s instead of waiting out its %.0f s session",
                        member_id, self.settings.group_session_timeout_s)  # fmt: skip

    async def _end(self, member_id: str) -> bool:
        end = functools.partial(faust_private.end_member, formed_first=not self.settings.group_leader_leaves)
        return bool(await self._on_consumer_thread(end, member_id))

    async def _on_consumer_thread(self, call: Any, *args: Any) -> Any:
        """``call(consumer, *args)`` on the consumer's own thread and event loop, where its coordinator lives; None
        when there is no consumer or it did not answer within :data:`END_BOUND_S` (stopping or starved)."""
        thread = self._thread()
        consumer = faust_private.kafka_consumer(thread)
        if thread is None or consumer is None:
            return None
        try:
            async with asyncio.timeout(END_BOUND_S):
                return await thread.call_thread(call, consumer, *args)
        except TimeoutError:
            return None

    def _heard(self, kind: str, token: str) -> None:
        """A peer's news. ``joining``: rejoin now, so that this worker's JoinGroup reaches the broker before the
        joiner's (which waits for this worker's ``changed``). Otherwise, ask the broker at once whether the group
        rebalances, and again every :data:`NUDGE_EVERY_S` until it does or :data:`NUDGE_S` ends. ``leader-stops``
        is also remembered (:meth:`leader_stopping`), by a stopping worker too."""
        if kind == LEADER_STOPS:
            self._leader_stops = (time.monotonic(), faust_private.group_generation(self._consumer()))
        if self._stopping:  # a stopping worker's consumer leaves: it does not rejoin
            return
        if kind == JOINING:
            self._spawn(self._rejoin_now())
            return
        self._nudge_until = time.monotonic() + NUDGE_S
        if self._nudging is None or self._nudging.done():
            self._nudging = self._spawn(self._nudge())

    async def _rejoin_now(self) -> None:
        self.rejoined += bool(await self._on_consumer_thread(faust_private.rejoin_now))

    async def _nudge(self) -> None:
        while not self._stopping and time.monotonic() < self._nudge_until:
            answer = await self._on_consumer_thread(faust_private.rejoin_if_rebalancing)
            if answer is not False:  # rejoining now, or nothing to do
                self.rejoined += answer is True
                return
            await asyncio.sleep(NUDGE_EVERY_S)

    async def rebalancing(self) -> None:
        """This worker's consumer is about to (re)join its group. The first time, it announces its join and waits
        (up to :data:`JOIN_WAIT_S`) until its live peers rejoin; afterwards it tells the others without waiting."""
        if self._stopping:
            return
        if not self._joined:
            self._joined = True
            await self._announce_join()
        else:
            self._spawn(self._announce())

    async def _announce_join(self) -> None:
        if (group := faust_private.group_of(self._consumer())) is None:
            return
        try:
            async with asyncio.timeout(JOIN_WAIT_S + ANNOUNCE_BOUND_S):
                await announce_join(self.settings.database(), self.token, group, JOIN_WAIT_S)
        except Exception as exc:  # the peers' heartbeats tell them a moment later
            log.debug("peer watch: the join was not announced (%s: %s)", type(exc).__name__, exc)

    async def _announce(self) -> None:
        try:
            async with asyncio.timeout(ANNOUNCE_BOUND_S):
                if (lock := self.held_lock()) is not None:
                    async with self._busy:
                        await lock.announce()
        except Exception as exc:  # the peers' heartbeats tell them a moment later
            log.debug("peer watch: the group's news was not sent (%s: %s)", type(exc).__name__, exc)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def leader_stopping(self) -> bool:
        """The group's leader said it stops within the last :data:`LEADER_STOP_NEWS_S`, and this worker has not
        joined a later generation since (then that leader is gone already: a rolling deploy's next stop must not
        wait for it). Read on the consumer's thread when this worker's consumer leaves."""
        if (news := self._leader_stops) is None:
            return False
        at, generation = news
        now = faust_private.group_generation(self._consumer())
        return time.monotonic() - at < LEADER_STOP_NEWS_S and now == generation

    async def stopping(self) -> None:
        """An orderly stop: no sweep any more, and the registration goes before the worker leaves its group, so
        no peer ends this member (a leader that lets its session run out must not be ended by LeaveGroup). The
        news says whether the leader stops; the connection stays open to hear the others' until :meth:`stopped`."""
        self._stopping = True
        for task in list(self._tasks):
            task.cancel()
        if (lock := self.lock) is not None:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(RELEASE_BOUND_S):
                    await self._release(lock)

    async def _release(self, lock: PeerLock) -> None:
        leads = faust_private.leads_group(self._consumer()) and members_seen(self.app) > 1
        async with self._busy:
            with contextlib.suppress(Exception):  # the peers learn of the leave from their heartbeats instead
                await lock.announce(LEADER_STOPS if leads else CHANGED)  # before the leave, as the consumer stops
            await lock.unregister()

    async def stopped(self) -> None:
        """The worker's consumer has left: the connection closes."""
        if (lock := self.lock) is not None:
            with contextlib.suppress(Exception):
                await lock.close()
