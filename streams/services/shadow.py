"""The shadow lane: candidates judged beside the verdict path, never on it (docs/shadow.md).

Like the drift monitor, the lane is a plain aiokafka consumer group of its own (``<app id>-shadow``) whose
offsets live in PostgreSQL (``monitor_offsets``) and move in the same transaction as its writes. It reads
``drafts`` — the live gate's own input, so the candidate sees the very record the gate saw — and keeps the
attempts a running shadow samples (:func:`engine.shadow.sampled`). A sampled attempt is judged only once its
live correction log is stored (the live verdict went out before it: the gate sends the verdict, then the log);
the lane waits for it, and gives up on an attempt (counted as skipped) once the draft is older than
``DRIFT_SHADOW_MAX_LAG_S``. A live verdict older than that when the lane reaches it is skipped too: a lane that
has fallen behind skips samples instead of queueing them. Its memory is one batch of records; its judge
calls hold the shadows' own budget slots; nothing the gate waits for.

Each batch is applied in one transaction (:class:`streams.store.shadows.ShadowBatch`): the rows of records at or
after the stored offsets are inserted (primary key, ``ON CONFLICT DO NOTHING``), their cost and the skips are
added to their shadows, and the offsets after the batch are stored. So a killed worker's batch lands whole or
not at all, and the next owner re-reads it from the stored offsets: no missing row, no duplicate.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

import orjson

from engine.errors import PayloadError
from engine.settings import Settings
from engine.shadow import Shadow, ShadowStatus, Spend, sampled
from streams.runtime.beside import BesideGroups
from streams.services.gate import Sender
from streams.services.monitor import consume_from_stored
from streams.services.shadow_judge import ShadowResult
from streams.store import Store
from streams.store.monitor import MonitorBatch
from streams.store.shadows import ShadowBatch
from streams.wire.payloads import Draft, ShadowChange, decode, encode
from streams.wire.topics import Topics, app_id

log = logging.getLogger(__name__)
BATCH = 200
POLL_S = 0.2  # how often a batch looks for the live correction logs it waits for
OFFSETS_EVERY_S = 2.0  # batches with nothing sampled store their offsets at most this often


@dataclass(frozen=True, slots=True)
class Record:
    """One ``drafts`` record as the lane reads it."""

    topic: str
    partition: int
    offset: int
    timestamp_ms: int
    value: bytes | None


@dataclass(frozen=True, slots=True)
class Sample:
    """One attempt a shadow judges."""

    shadow: Shadow
    draft: Draft
    record: Record

    @property
    def key(self) -> tuple[str, int]:
        return (self.draft.draft_id, self.draft.attempt)


class Judging(Protocol):
    """:class:`streams.services.shadow_judge.CandidateJudge`."""

    async def __call__(
        self, shadow: Shadow, draft: Draft, live: dict[str, Any], earlier: Sequence[dict[str, Any]]
    ) -> ShadowResult: ...


def shadow_group(settings: Settings) -> str:
    return f"{app_id(settings)}-shadow"


def shadow_of_change(change: ShadowChange) -> Shadow:
    return Shadow(name=change.name, agents=change.agents, propositions=change.propositions, judge=change.judge,
                  settings=change.settings, sample=change.sample, budget_usd=change.budget_usd,
                  max_tokens=change.max_tokens, status=ShadowStatus(change.status),
                  created_at=change.created_at)  # fmt: skip


class ShadowCache:
    """The shadows a worker knows: records of the ``shadows`` topic (at once) and a read of the table every second
    (covers missed records and budgets spent on other workers)."""

    def __init__(self) -> None:
        self._shadows: dict[str, Shadow] = {}
        self.refreshed_ms = 0  # when the table was last read whole (epoch ms)

    def apply(self, raw: bytes | None) -> None:
        """A ``shadows`` record (raises PayloadError)."""
        shadow = shadow_of_change(decode(ShadowChange, raw))
        self._shadows[shadow.name] = shadow

    def replace(self, shadows: Sequence[Shadow], at_ms: int | None = None) -> None:
        """The table read whole at ``at_ms`` (default: now)."""
        self._shadows = {s.name: s for s in shadows}
        self.refreshed_ms = int(time.time() * 1000) if at_ms is None else at_ms

    def running(self) -> list[Shadow]:
        return [s for s in self._shadows.values() if s.running]

    def samples(self, draft: Draft, record: Record) -> list[Sample]:
        """The running shadows that judge this attempt: the agent is covered, the draft sampled, and the record
        written after the shadow started."""
        at = datetime.fromtimestamp(record.timestamp_ms / 1000, UTC)
        return [
            Sample(s, draft, record)
            for s in self.running()
            if s.covers(draft.agent_id)
            and (s.created_at is None or at >= s.created_at)
            and sampled(s.name, draft.draft_id, s.sample)
        ]


@dataclass
class ShadowCounts:
    """Prometheus: candidate verdicts stored and samples skipped by this worker, per shadow."""

    verdicts: Counter[str]
    skipped: Counter[str]

    @classmethod
    def empty(cls) -> ShadowCounts:
        return cls(Counter(), Counter())


@dataclass
class Outcome:
    """What a batch produced before it is applied."""

    results: list[tuple[Sample, ShadowResult]]
    skipped: list[Sample]
    spent: set[str]


class ShadowService:
    def __init__(self, settings: Settings, store: Callable[[], Awaitable[Store]], cache: ShadowCache,
                 judge: Judging, send: Sender, counts: ShadowCounts | None = None) -> None:  # fmt: skip
        self.settings, self.store, self.cache, self.judge, self.send = settings, store, cache, judge, send
        self.counts = counts or ShadowCounts.empty()
        self.topics = Topics(settings.topic_prefix)
        self.group = shadow_group(settings)
        self._written = 0.0  # when the offsets were last stored (monotonic)

    async def handle(self, records: Sequence[Record]) -> Outcome:
        """Judge the batch's samples and apply the batch (offsets included) in one transaction. A batch holding a
        record newer than the cache's last read of the table reads it first: a shadow started just before a
        draft is never missed because its announcement was late."""
        if records and max(r.timestamp_ms for r in records) >= self.cache.refreshed_ms:
            read_at = int(time.time() * 1000)
            self.cache.replace(await (await self.store()).shadow_states(), read_at)
        samples = [s for r in records for s in self._samples(r)]
        outcome = Outcome([], [], set())
        if not samples and time.monotonic() - self._written < OFFSETS_EVERY_S:
            return outcome  # nothing sampled: the offsets move with a later batch (a restart re-reads, harmlessly)
        if samples:
            live, late = await self._live(samples)
            outcome.skipped.extend(late)
            ready = [s for s in samples if s.key in live and not self._stale(live[s.key])]
            outcome.skipped.extend(s for s in samples if s.key in live and self._stale(live[s.key]))
            for name in sorted({s.shadow.name for s in ready}):
                await self._judge_shadow([s for s in ready if s.shadow.name == name], live, outcome)
        await self._apply(records, outcome)
        return outcome

    def _samples(self, record: Record) -> list[Sample]:
        if not self.cache.running():  # no shadow to sample for: the draft is not decoded (the gate's CPU)
            return []
        try:
            draft = decode(Draft, record.value)
        except PayloadError:  # the gate dead-letters it
            return []
        return self.cache.samples(draft, record)

    async def _live(self, samples: list[Sample]) -> tuple[dict[tuple[str, int], dict[str, Any]], list[Sample]]:
        """The stored live correction logs of ``samples``, waiting for those not stored yet; the samples given up
        (the draft older than the maximum lag and still no live verdict)."""
        store, found = await self.store(), dict[tuple[str, int], dict[str, Any]]()
        waiting = samples
        while True:
            found.update(await store.live_verdicts({s.key for s in waiting if s.key not in found}))
            waiting = [s for s in waiting if s.key not in found]
            oldest = time.time() - self.settings.shadow_max_lag_s
            late = [s for s in waiting if s.record.timestamp_ms / 1000 < oldest]
            if len(late) == len(waiting):
                return found, late
            await asyncio.sleep(POLL_S)

    def _stale(self, live: dict[str, Any]) -> bool:
        created: datetime = live["created_at"]
        return created.timestamp() < time.time() - self.settings.shadow_max_lag_s

    async def _judge_shadow(self, samples: list[Sample], live: dict[tuple[str, int], dict[str, Any]],
                            outcome: Outcome) -> None:  # fmt: skip
        """Judge one shadow's samples: as many drafts at once as the lane has judge slots (each checked for its
        lag right before it is judged, so a sample never waits for a slot past the maximum lag), a draft's
        attempts in order; one at a time under a budget, so it stops right after the call that spent it."""
        shadow, store = samples[0].shadow, await self.store()
        stored = await store.shadow(shadow.name)
        if stored is None or stored["status"] != ShadowStatus.RUNNING:
            return
        spend = Spend(int(stored["spent_tokens"]), float(stored["spent_usd"]))
        budgeted = shadow.budget_usd is not None or shadow.max_tokens is not None
        gate = asyncio.Semaphore(1 if budgeted else self.settings.shadow_judge_slots)
        drafts: dict[str, list[Sample]] = {}
        for s in samples:
            drafts.setdefault(s.draft.draft_id, []).append(s)

        async def one(attempts: list[Sample]) -> None:
            async with gate:
                earlier = await store.shadow_attempts(shadow.name, attempts[0].draft.draft_id)
                for s in sorted(attempts, key=lambda s: s.draft.attempt):
                    if spend.exhausted(shadow.budget_usd, shadow.max_tokens):
                        outcome.spent.add(shadow.name)
                        return
                    if self._stale(live[s.key]):  # fell behind while this batch was judged: skip, never queue
                        outcome.skipped.append(s)
                        continue
                    result = await self.judge(shadow, s.draft, live[s.key], earlier)
                    spend.add(result.usage, result.usd)
                    earlier.append({**result.row})
                    outcome.results.append((s, result))
            if spend.exhausted(shadow.budget_usd, shadow.max_tokens):
                outcome.spent.add(shadow.name)

        await asyncio.gather(*(one(a) for a in drafts.values()))

    async def _apply(self, records: Sequence[Record], outcome: Outcome) -> None:
        store = await self.store()
        async with store.pool.acquire() as conn, conn.transaction():
            offsets, batch = MonitorBatch(conn, self.group), ShadowBatch(conn, self.group)
            stored = await _locked_offsets(offsets, records)

            def fresh(s: Sample) -> bool:
                return s.record.offset >= stored.get((s.record.topic, s.record.partition), 0)

            results = [(s, r) for s, r in outcome.results if fresh(s)]
            skipped = Counter(s.shadow.name for s in outcome.skipped if fresh(s))
            names = sorted({s.shadow.name for s, _ in results} | set(skipped) | outcome.spent)
            await batch.spends(names)
            inserted = await batch.insert([r.row for _, r in results])
            kept = [(s, r) for s, r in results if (s.shadow.name, *s.key) in inserted]
            for name in names:
                mine = [r for s, r in kept if s.shadow.name == name]
                spend = Spend()
                for r in mine:
                    spend.add(r.usage, r.usd)
                await batch.charge(name, spend.tokens, spend.usd, skipped[name], name in outcome.spent)
            for s, r in kept:
                await self._send(s, r)
            await offsets.write({}, _after(records, stored), [])
        self._written = time.monotonic()
        self._count(kept, skipped)
        if outcome.spent:
            await self._announce_spent(outcome.spent)

    async def _send(self, sample: Sample, result: ShadowResult) -> None:
        value = orjson.dumps(result.record)
        await (await self.send(self.topics.shadow_verdicts, sample.draft.agent_id.encode(), value))

    def _count(self, kept: list[tuple[Sample, ShadowResult]], skipped: Counter[str]) -> None:
        for s, _ in kept:
            self.counts.verdicts[s.shadow.name] += 1
        self.counts.skipped.update(skipped)

    async def _announce_spent(self, names: set[str]) -> None:
        """Tell every worker a shadow's budget is spent (its row says so already)."""
        store = await self.store()
        for name in sorted(names):
            row = await store.shadow(name)
            if row is not None:
                await (await self.send(self.topics.shadows, name.encode(), change_record(row)))
        self.cache.replace(await store.shadow_states())


def change_record(row: dict[str, Any]) -> bytes:
    """A ``shadows`` record from a stored row."""
    fields = {k: row[k] for k in ShadowChange.model_fields if k in row}
    return encode(ShadowChange(**fields))


async def _locked_offsets(batch: MonitorBatch, records: Sequence[Record]) -> dict[tuple[str, int], int]:
    by_topic: dict[str, set[int]] = {}
    for r in records:
        by_topic.setdefault(r.topic, set()).add(r.partition)
    return {(t, p): off for t, ps in by_topic.items() for p, off in (await batch.offsets(t, ps)).items()}


def _after(records: Sequence[Record], stored: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
    after: dict[tuple[str, int], int] = {}
    for r in records:
        where = (r.topic, r.partition)
        after[where] = max(after.get(where, stored.get(where, 0)), r.offset + 1)
    return after


async def run_shadows(service: ShadowService, groups: BesideGroups | None = None) -> None:
    """Consume ``drafts`` for the shadows until cancelled (a worker task beside the gate)."""

    async def handle(records: list[Any]) -> None:
        await service.handle([Record(r.topic, r.partition, r.offset, r.timestamp, r.value) for r in records])

    await consume_from_stored(service.settings, service, [service.topics.drafts], BATCH, handle, groups)
