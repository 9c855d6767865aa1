"""The workers of each consumer group, as PostgreSQL sees them (``group_members``, migration 015).

A worker registers on a connection of its own (:meth:`PeerLock.hold`): it takes a session advisory lock on its
token, then writes its row. The lock lasts exactly as long as that connection, and the connection as long as
the process: when a worker is killed, its kernel closes the socket, PostgreSQL ends the backend and frees the
lock within milliseconds. A row whose lock another worker can take is therefore a worker that is gone without
an orderly stop (an orderly stop deletes its row first, :meth:`PeerLock.unregister`). :meth:`PeerLock.sweep` finds
such rows and hands each member id to the caller, which ends the membership on the broker
(:mod:`streams.worker.peers`).

A restarted PostgreSQL, or a cut between it and the workers, frees every lock at once while the workers are
alive: a worker sweeps only once it has held its own lock for ``grace_s`` (the session timeout), time for every
live worker to take its lock again after the same outage.

The same connection carries the group's news (:data:`CHANNEL`), of three kinds. ``joining``: a worker is about to
send its first JoinGroup (:func:`announce_join`, on a connection of its own: it holds no lock yet); it waits,
briefly, until its live peers say they rejoin. ``changed``: a worker rejoins, stops, or ended a dead member
(:meth:`PeerLock.announce`). ``leader-stops``: the worker that leads the group stops (a follower stopping at the
same moment then leaves after it). The others of its group hear all three (:meth:`PeerLock.listen`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg

#: Take the worker's lock, then (re)write its row: a row exists only while its lock was held once.
_HOLD_SQL = "SELECT pg_advisory_lock(hashtextextended($1, 0))"
_REGISTER_SQL = """
INSERT INTO group_members (token, group_id, member_id) VALUES ($1, $2, $3)
ON CONFLICT (token) DO UPDATE SET group_id = EXCLUDED.group_id, member_id = EXCLUDED.member_id"""
_MEMBER_SQL = "UPDATE group_members SET member_id = $2 WHERE token = $1"
_RELEASE_SQL = "DELETE FROM group_members WHERE token = $1"
#: A worker's partition claims (migration 016, :mod:`streams.worker.claims`), and the partitions of ``$3`` another live
#: worker of the group claims (live: its lock is held, tested as in :data:`_CANDIDATES_SQL`).
_CLAIM_SQL = """
INSERT INTO group_claims (token, group_id, partitions) VALUES ($1, $2, $3)
ON CONFLICT (token) DO UPDATE SET group_id = EXCLUDED.group_id, partitions = EXCLUDED.partitions"""
_CLAIMED_SQL = """
SELECT DISTINCT p FROM group_claims, unnest(partitions) AS p
WHERE group_id = $1 AND token <> $2 AND p = ANY($3::text[])
AND NOT pg_try_advisory_xact_lock(hashtextextended(token, 0))"""
_UNCLAIM_SQL = "DELETE FROM group_claims WHERE token = $1"
_GONE_CLAIMS_SQL = """
DELETE FROM group_claims
WHERE group_id = $1 AND token <> $2 AND pg_try_advisory_xact_lock(hashtextextended(token, 0))"""

#: The other rows of the group (no row lock: a live worker updates and deletes its own row meanwhile), each with
#: whether its worker's lock is free, i.e. gone with its connection. The lock is taken for this transaction only, so
#: two workers sweeping at once never both end the same member: the second finds it taken and leaves the row to the
#: first. The select list is evaluated only for the rows the WHERE clause keeps: no other group's lock is taken.
_CANDIDATES_SQL = """
SELECT token, member_id, pg_try_advisory_xact_lock(hashtextextended(token, 0)) AS gone FROM group_members
WHERE group_id = $1 AND token <> $2 ORDER BY started_at"""

#: The channel of the group's news; a payload is "<kind> <token> <group id>" (the token tells a worker its own news).
CHANNEL = "drift_group_changes"
JOINING, CHANGED, LEADER_STOPS = "joining", "changed", "leader-stops"
_NOTIFY_SQL = "SELECT pg_notify($1, $2)"

#: Called with the kind and the token of each piece of news of the group from another worker.
Heard = Callable[[str, str], None]


def _payload(kind: str, token: str, group_id: str) -> str:
    return f"{kind} {token} {group_id}"


async def _listen(connection: asyncpg.Connection, token: str, group_id: str, heard: Heard) -> None:
    def received(connection: Any, pid: int, channel: str, payload: str) -> None:
        kind, their_token, their_group = [*payload.split(" ", 2), "", ""][:3]
        if their_token != token and their_group == group_id:
            heard(kind, their_token)

    await connection.add_listener(CHANNEL, received)


#: Ends a departed member on the broker: True once it is no member any more (its row goes), False to try later.
EndMember = Callable[[str], Awaitable[bool]]


class PeerLock:
    """One worker's registration in its group, on its own connection (never a pooled one: the lock must last
    exactly as long as the process)."""

    def __init__(self, connection: asyncpg.Connection, token: str, group_id: str, member_id: str) -> None:
        self.connection = connection
        self.token = token
        self.group_id = group_id
        self.member_id = member_id
        self.held_at = time.monotonic()

    @classmethod
    async def hold(
        cls, url: str, token: str, group_id: str, member_id: str = "", *, timeout_s: float = 10.0
    ) -> PeerLock:
        """Connect, take the worker's lock and write its row (a worker whose previous connection was lost holds
        it again with the same token)."""
        connection = await asyncpg.connect(url, timeout=timeout_s)
        try:
            await connection.execute(_HOLD_SQL, token)
            await connection.execute(_REGISTER_SQL, token, group_id, member_id)
        except BaseException:
            connection.terminate()
            raise
        return cls(connection, token, group_id, member_id)

    async def member(self, member_id: str) -> None:
        """Record the worker's current member id (it changes when the broker forgot the member)."""
        if member_id != self.member_id:
            await self.connection.execute(_MEMBER_SQL, self.token, member_id)
            self.member_id = member_id

    async def sweep(self, grace_s: float, end: EndMember) -> list[str]:
        """The member ids of the group's departed workers that ``end`` ended; their rows go. A row without a
        member id (a worker that died before it joined) just goes. Nothing before this lock was held ``grace_s``."""
        ended: list[str] = []
        if time.monotonic() - self.held_at < grace_s:
            return ended
        async with self.connection.transaction():
            rows = await self.connection.fetch(_CANDIDATES_SQL, self.group_id, self.token)
            for row in rows:
                if not row["gone"]:
                    continue  # alive: its worker holds the lock
                member_id = str(row["member_id"])
                if member_id and not await end(member_id):
                    continue  # the broker could not end it now: the next sweep tries again
                await self.connection.execute(_RELEASE_SQL, row["token"])
                if member_id:
                    ended.append(member_id)
            await self.connection.execute(_GONE_CLAIMS_SQL, self.group_id, self.token)
        return ended

    async def claim(self, partitions: list[str]) -> None:
        """Record the partitions this worker holds (replacing its earlier claim)."""
        await self.connection.execute(_CLAIM_SQL, self.token, self.group_id, partitions)

    async def unclaim(self) -> None:
        """The worker has left its group: it holds nothing."""
        await self.connection.execute(_UNCLAIM_SQL, self.token)

    async def announce(self, kind: str = CHANGED) -> None:
        """Tell the other workers of the group that it is changing."""
        await self.connection.execute(_NOTIFY_SQL, CHANNEL, _payload(kind, self.token, self.group_id))

    async def listen(self, heard: Heard) -> None:
        """Call ``heard(kind, token)`` for every piece of news of another worker of this group (from now until the
        connection closes)."""
        await _listen(self.connection, self.token, self.group_id, heard)

    async def unregister(self) -> None:
        """The orderly stop: the row goes (no other worker will end this member); the connection stays, to hear the
        group's news until the worker has left its group (then :meth:`close`)."""
        await self.connection.execute(_RELEASE_SQL, self.token)

    async def close(self) -> None:
        """Close the connection (the lock goes with it; the row stays for the others to sweep)."""
        if not self.connection.is_closed():
            await self.connection.close(timeout=2.0)


async def connect(url: str, timeout_s: float) -> asyncpg.Connection:
    """A connection of its own (a worker not registered yet reads the claims on it)."""
    return await asyncpg.connect(url, timeout=timeout_s)


async def claimed_elsewhere(
    connection: asyncpg.Connection, group_id: str, token: str, partitions: list[str]
) -> set[str]:
    """Which of ``partitions`` a live worker of ``group_id`` other than ``token``'s claims."""
    async with connection.transaction():
        rows = await connection.fetch(_CLAIMED_SQL, group_id, token, partitions)
    return {str(row["p"]) for row in rows}


async def announce_join(url: str, token: str, group_id: str, wait_s: float, *, timeout_s: float = 1.0) -> int:
    """Tell the workers of ``group_id`` that this one is about to join, then wait up to ``wait_s`` until each live
    one said it rejoins (news ``changed``), so that their JoinGroup reaches the broker before this worker's. The
    number that did. No live peer (a fresh group, or the ``group_members`` table not created yet): no wait."""
    live: set[str] = set()
    answered: set[str] = set()
    everyone = asyncio.Event()

    def heard(kind: str, their_token: str) -> None:
        if kind == CHANGED:
            answered.add(their_token)
            if answered >= live:
                everyone.set()

    connection = await asyncpg.connect(url, timeout=timeout_s)
    try:
        await _listen(connection, token, group_id, heard)
        await connection.execute(_NOTIFY_SQL, CHANNEL, _payload(JOINING, token, group_id))
        with contextlib.suppress(asyncpg.UndefinedTableError):
            async with connection.transaction():
                rows = await connection.fetch(_CANDIDATES_SQL, group_id, token)
                live.update(row["token"] for row in rows if not row["gone"])  # its worker holds its lock
        if live and not answered >= live:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait_s):
                    await everyone.wait()
        return len(answered & live)
    finally:
        await connection.close(timeout=timeout_s)
