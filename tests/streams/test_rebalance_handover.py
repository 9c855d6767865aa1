"""A rebalance takes partitions away: their queued drafts are given up (fetched again by the next owner) and the
drafts being judged finish first, so no draft is judged by two workers at once (issue 10, defect 1)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from streams.runtime.dispatch import KeyedDispatcher
from streams.worker.lanes import GateLane


async def test_withdraw_drops_queued_items_and_waits_for_running_ones() -> None:
    release = asyncio.Event()
    started: list[str] = []
    done: list[str] = []

    async def handler(item: tuple[str, int]) -> None:
        started.append(item[0])
        await release.wait()
        done.append(item[0])

    dispatcher: KeyedDispatcher[tuple[str, int]] = KeyedDispatcher(handler, max_in_flight=10)
    for item in [("a1", 0), ("a2", 0), ("b1", 1), ("b2", 1), ("a3", 0)]:
        await dispatcher.submit(item[0][0], item)
    await asyncio.sleep(0)  # both heads start
    withdrawing = asyncio.ensure_future(dispatcher.withdraw(lambda item: item[1] == 0))
    await asyncio.sleep(0)
    assert not withdrawing.done()  # a1 is still running
    release.set()
    removed = await withdrawing
    assert removed == [("a2", 0), ("a3", 0)] and "a1" in done
    await dispatcher.wait_idle()
    assert sorted(done) == ["a1", "b1", "b2"]
    assert dispatcher.in_flight == 0


@dataclass(eq=False)
class Message:
    tp: int
    offset: int


async def test_the_gate_lane_leaves_queued_drafts_of_revoked_partitions_unacked() -> None:
    unacked: set[Any] = set()
    consumer = SimpleNamespace(ack=lambda message: None, release=unacked.discard)
    lane = GateLane(SimpleNamespace(), consumer, lambda: None, None)  # type: ignore[arg-type,return-value]
    gate = asyncio.Event()
    handled: list[int] = []

    async def handle(item: Any) -> None:
        await gate.wait()
        handled.append(item[0].offset)

    lane.dispatcher._handler = handle
    messages = [Message(0, n) for n in range(3)]
    unacked.update(messages)
    for message in messages:
        await lane.dispatcher.submit("michael", (message, None, 0.0))  # type: ignore[arg-type]
    await asyncio.sleep(0)
    revoking = asyncio.ensure_future(lane.on_revoked({0}))
    await asyncio.sleep(0)
    assert not revoking.done()  # the draft being judged finishes first
    gate.set()
    await revoking
    assert handled == [0] and unacked == {messages[0]}  # 1 and 2 go to the next owner


async def _loaded() -> None:
    return None


#: a configuration cache whose stored configurations are in (the lane decides nothing before that)
LOADED = SimpleNamespace(wait_loaded=_loaded)


async def test_revocation_waits_for_a_lane_batch_in_progress() -> None:
    letting_go = asyncio.Event()
    dead: list[Any] = []

    async def dead_letter(record: Any, reason: str) -> None:
        await letting_go.wait()  # the batch is still busy with this record
        dead.append(record)

    consumer = SimpleNamespace(release=lambda message: None, ack=lambda message: None)
    gate = SimpleNamespace(configs=LOADED)
    lane = GateLane(gate, consumer, lambda: None, dead_letter)  # type: ignore[arg-type,return-value]
    bad = SimpleNamespace(key=b"michael", value=b"{not json", tp=0, partition=0, offset=5, topic="drafts")
    batch = asyncio.ensure_future(lane([bad]))
    await asyncio.sleep(0)
    revoking = asyncio.ensure_future(lane.on_revoked({0}))
    await asyncio.sleep(0)
    assert not revoking.done()
    letting_go.set()
    await asyncio.gather(batch, revoking)
    assert dead == [bad]
