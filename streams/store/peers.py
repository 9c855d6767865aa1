"""The workers of each consumer group, as PostgreSQL sees them (``group_members``, migration 015).

A worker registers on a connection of its own (:meth:`PeerLock.hold`): it takes a session advisory lock on its
token, then writes its row. The lock lasts exactly as long as that connection, and the connection as long as
the process: when a worker is killed, its kernel closes the socket, PostgreSQL ends the backend and frees the
lock within milliseconds. A row whose lock another worker can take is therefore a worker that is gone without
an orderly stop (an orderly stop deletes its row first, :meth:`PeerLock.release`). :meth:`PeerLock.sweep` finds
such rows and hands each member id to the caller, which ends the membership on the broker
(:mod:`streams.worker.peers`).

A restarted PostgreSQL, or a cut between it and the workers, frees every lock at once while the workers are
alive: a worker sweeps only once it has held its own lock for ``grace_s`` (the session timeout), time for every
live worker to take its lock again after the same outage.

The same connection carries the group's news (:data:`CHANNEL`): a worker that is about to join, stops or ended a
dead member says so (:meth:`PeerLock.announce`, or :func:`announce_once` before it holds its lock), and the others
of its group hear it (:meth:`PeerLock.listen`) and look at their group at once instead of at their next heartbeat.
"""

from __future__ import annotations

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

#: The other rows of the group (no row lock: a live worker updates and deletes its own row meanwhile), each with
#: whether its worker's lock is free, i.e. gone with its connection. The lock is taken for this transaction only, so
#: two workers sweeping at once never both end the same member: the second finds it taken and leaves the row to the
#: first. The select list is evaluated only for the rows the WHERE clause keeps: no other group's lock is taken.
_CANDIDATES_SQL = """
SELECT token, member_id, pg_try_advisory_xact_lock(hashtextextended(token, 0)) AS gone FROM group_members
WHERE group_id = $1 AND token <> $2 ORDER BY started_at"""

#: The channel of the group's news; a payload is "<token> <group id>" (the token tells a worker its own news).
CHANNEL = "drift_group_changes"
_NOTIFY_SQL = "SELECT pg_notify($1, $2)"

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
        return ended

    async def announce(self) -> None:
        """Tell the other workers of the group that it is changing (see :func:`announce_once`)."""
        await self.connection.execute(_NOTIFY_SQL, CHANNEL, f"{self.token} {self.group_id}")

    async def listen(self, heard: Callable[[], None]) -> None:
        """Call ``heard()`` for every announcement of another worker of this group (from now until the connection
        closes)."""

        def received(connection: Any, pid: int, channel: str, payload: str) -> None:
            token, _, group_id = payload.partition(" ")
            if token != self.token and group_id == self.group_id:
                heard()

        await self.connection.add_listener(CHANNEL, received)

    async def release(self) -> None:
        """The orderly stop: the row goes (no other worker will end this member), then the connection."""
        try:
            await self.connection.execute(_RELEASE_SQL, self.token)
        finally:
            await self.close()

    async def close(self) -> None:
        """Close the connection (the lock goes with it; the row stays for the others to sweep)."""
        if not self.connection.is_closed():
            await self.connection.close(timeout=2.0)


async def announce_once(url: str, token: str, group_id: str, *, timeout_s: float = 2.0) -> None:
    """Tell the workers of ``group_id`` on a connection of its own that the group is about to change: a worker that
    starts announces its join before it holds its lock (no table is needed: the news is a notification)."""
    connection = await asyncpg.connect(url, timeout=timeout_s)
    try:
        await connection.execute(_NOTIFY_SQL, CHANNEL, f"{token} {group_id}")
    finally:
        await connection.close(timeout=timeout_s)
