"""The broker's floor for a hand-over: a bare aiokafka consumer group doing what the workers do in
:mod:`ops.bench.handover` — one member leaves gracefully, a new member joins — with the workers' group timeouts
(``DRIFT_GROUP_*``) and nothing else (no tables, no restore, no processing).

``leave``: from the leaving member's ``stop()`` until the remaining member owns every partition. ``join``: from
the new member's ``start()`` until both members hold their new assignments. ``kill``: a member in a process of its
own is SIGKILLed, until the remaining member owns every partition (its session runs out: nothing ends it early,
unlike a worker's, :mod:`streams.worker.peers`). Run inside the benchmark's own process, on the benchmark's
broker, in the same run.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener

from engine.settings import Settings
from ops.bench.common import create_topics_named

PARTITIONS = 3


@dataclass
class Member:
    """One bare group member polling in a task; ``assigned`` holds its assignments (time, partitions)."""

    consumer: AIOKafkaConsumer
    assigned: list[tuple[float, frozenset[int]]] = field(default_factory=list)
    task: asyncio.Future[None] | None = None

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task
        await self.consumer.stop()

    def owns_since(self, after: float, partitions: int) -> float | None:
        """The first time after ``after`` this member held ``partitions`` partitions."""
        return next((t for t, tps in self.assigned if t >= after and len(tps) == partitions), None)


class _Listener(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(self, member: Member) -> None:
        self.member = member

    async def on_partitions_revoked(self, revoked: Any) -> None:
        return None

    async def on_partitions_assigned(self, assigned: Any) -> None:
        self.member.assigned.append((time.monotonic(), frozenset(tp.partition for tp in assigned)))


async def _member(settings: Settings, topic: str, group: str) -> Member:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=settings.broker, group_id=group, enable_auto_commit=False, fetch_max_wait_ms=10,
        session_timeout_ms=int(settings.group_session_timeout_s * 1000),
        heartbeat_interval_ms=int(settings.group_heartbeat_s * 1000),
        rebalance_timeout_ms=int(settings.group_rebalance_timeout_s * 1000),
    )  # fmt: skip
    member = Member(consumer)
    consumer.subscribe([topic], listener=_Listener(member))
    await consumer.start()

    async def poll() -> None:
        while True:
            await consumer.getmany(timeout_ms=100)

    member.task = asyncio.ensure_future(poll())
    return member


async def _until(check: Any, timeout_s: float) -> float:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if (found := check()) is not None:
            return float(found)
        await asyncio.sleep(0.02)
    raise RuntimeError("the bare consumer group did not settle")


async def measure_floor(settings: Settings, rounds: int = 2, timeout_s: float = 60.0) -> dict[str, list[float]]:
    """``rounds`` leaves and joins of a two-member bare group; seconds of each."""
    topic, group = f"floor-{uuid.uuid4().hex[:6]}", f"floor-{uuid.uuid4().hex[:6]}"
    await create_topics_named(settings.broker, [topic], PARTITIONS)
    first = await _member(settings, topic, group)
    await _until(lambda: first.owns_since(0, PARTITIONS), timeout_s)
    out: dict[str, list[float]] = {"leave": [], "join": [], "kill": []}
    try:
        for _ in range(rounds):
            join, leave = await _round(settings, topic, group, first, timeout_s)
            out["join"].append(join)
            out["leave"].append(leave)
        out["kill"].append(await _kill_round(settings, topic, group, first, timeout_s))
    finally:
        await first.stop()
    return out


async def _round(settings: Settings, topic: str, group: str, first: Member, timeout_s: float) -> tuple[float, float]:
    """A second member joins, then leaves: (seconds of the join, of the leave)."""
    started = time.monotonic()
    second = await _member(settings, topic, group)
    join = await _until(lambda: _split(first, second, started), timeout_s) - started
    await asyncio.sleep(2 * settings.group_heartbeat_s)  # a stable group before the leave
    left = time.monotonic()
    await second.stop()
    leave = await _until(lambda: first.owns_since(left, PARTITIONS), timeout_s) - left
    await asyncio.sleep(2 * settings.group_heartbeat_s)
    return join, leave


def _split(first: Member, second: Member, after: float) -> float | None:
    """When both members hold a share (the later of the two assignments), or None."""
    mine = next((t for t, tps in second.assigned if t >= after and tps), None)
    theirs = next((t for t, tps in first.assigned if t >= after and 0 < len(tps) < PARTITIONS), None)
    return None if mine is None or theirs is None else max(mine, theirs)


#: A bare member in a process of its own, with the workers' timeouts; it says when it holds partitions.
_MEMBER = """
import asyncio, sys
from aiokafka import AIOKafkaConsumer
async def main(broker, topic, group, session_ms, heartbeat_ms, rebalance_ms):
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=broker, group_id=group, enable_auto_commit=False,
                                session_timeout_ms=int(session_ms), heartbeat_interval_ms=int(heartbeat_ms),
                                rebalance_timeout_ms=int(rebalance_ms), fetch_max_wait_ms=10)
    await consumer.start()
    while not consumer.assignment():
        await consumer.getmany(timeout_ms=100)
    print("assigned", flush=True)
    while True:
        await consumer.getmany(timeout_ms=100)
asyncio.run(main(*sys.argv[1:]))
"""


async def _kill_round(settings: Settings, topic: str, group: str, first: Member, timeout_s: float) -> float:
    """A member in its own process joins and is SIGKILLed: seconds until the first member owns every partition."""
    timeouts = (settings.group_session_timeout_s, settings.group_heartbeat_s, settings.group_rebalance_timeout_s)
    member = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _MEMBER, settings.broker, topic, group, *(str(int(t * 1000)) for t in timeouts),
        stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        assert member.stdout is not None
        async with asyncio.timeout(timeout_s):
            await member.stdout.readline()
        await asyncio.sleep(2 * settings.group_heartbeat_s)  # a stable group before the kill
        killed = time.monotonic()
        member.kill()
        return await _until(lambda: first.owns_since(killed, PARTITIONS), timeout_s) - killed
    finally:
        with contextlib.suppress(ProcessLookupError):
            member.kill()
        await member.wait()
