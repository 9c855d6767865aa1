"""What the chaos scenarios share: the stage (broker, database, workers), a paced draft stream with malformed
records interleaved, and the figures read back from the topics and the tables.

The judge of every scenario is the real ``anthropic`` SDK in the workers, pointed at the local Messages-API fake
(:mod:`ops.fakes.messages_api`, a test double) that this process serves; its scores are random, so a draft
judged twice could get two different decisions — exactly what verdict idempotency must prevent.
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from engine.settings import Settings
from ops.fakes.server import Behaviour, ReceivedRequest
from streams.client.admin import publish_config
from streams.embedded import WorkerProcess, free_port
from streams.runtime.fetchwait import kafka_consumer
from streams.store import Store
from streams.wire.kafka import client_kwargs, create_topics
from streams.wire.topics import Topics

Figures = dict[str, float | int | str]


class StartedWorker(Protocol):
    process: Any

    def kill(self) -> None: ...
    def stop(self, timeout_s: float = 20.0) -> None: ...


@dataclass
class Stage:
    """One scenario's slice of a stack: its own topic prefix (topics, consumer group, changelogs) and workers."""

    broker: str
    database_url: str
    tmp: Path
    prefix: str = field(default_factory=lambda: f"chaos{uuid.uuid4().hex[:6]}.")
    stack: Any = None  # the EmbeddedStack, for scenarios that stop a part of it
    workers: list[WorkerProcess] = field(default_factory=list)
    worker_env: dict[str, str] = field(default_factory=dict)  # more settings of every worker (the tests' group timing)

    @property
    def settings(self) -> Settings:
        return Settings(broker=self.broker, database_url=self.database_url, topic_prefix=self.prefix)

    def worker(self, judge_url: str, deadline_s: float = 1.5, partitions: int = 3) -> WorkerProcess:
        args = ["--prefix", self.prefix, "--judge", "anthropic", "--partitions", str(partitions)]
        env = {
            "DRIFT_BROKER": self.broker,
            "DRIFT_DATABASE_URL": self.database_url,
            "DRIFT_WEB_PORT": str(free_port()),
            "DRIFT_JUDGE_DEADLINE_S": str(deadline_s),
            "DRIFT_ANTHROPIC_BASE_URL": judge_url,
            "ANTHROPIC_API_KEY": "chaos-fake-key",  # the fake server accepts any key
            **self.worker_env,
        }
        worker = WorkerProcess.for_prefix(env, self.tmp / f"{self.prefix}worker-{len(self.workers)}.log", *args)
        self.workers.append(worker)
        return worker

    async def start(self, worker: WorkerProcess) -> WorkerProcess:
        await asyncio.to_thread(worker.start, 180.0)  # a loaded machine (other suites beside) starts workers slowly
        return worker

    def close(self) -> None:
        """Stop the workers side by side: a teardown waits for one clean shutdown, not for one after another."""
        with ThreadPoolExecutor() as pool:
            list(pool.map(lambda worker: worker.stop(), self.workers))


def random_scores(seed: int) -> Callable[[ReceivedRequest], Behaviour]:
    """Every judge call answers 9 or 2 at random: a second judgement of a draft often decides otherwise."""
    rng = random.Random(seed)
    return lambda request: Behaviour.auto(value=rng.choice((9, 2)))


#: The suitability check on. Its propositions include an inverted one, so the fake judge's 9 scores 6.97 and its 2
#: scores 4.48: at the default threshold (7) both fail and a draft judged twice would be decided alike. At 5.5 the
#: two answers decide differently, so a second judgement shows as a conflicting verdict.
SUITABILITY = {"gate_suitability_enabled": True, "gate_suitability_threshold": 5.5, "max_correction_attempts": 2}


#: The similarity check alone: no judge call, so the gate decides these agents' drafts inline, a lane batch at a time
INLINE = {"gate_similarity_enabled": True}


async def prepare(
    stage: Stage,
    agents: Iterable[str],
    partitions: int = 3,
    config: dict[str, Any] | None = None,
    inline: Iterable[str] = (),
) -> None:
    """Topics up front, and ``config`` (default: the suitability check switched on) stored for every agent and
    announced on the ``agent-config`` topic; the ``inline`` agents get :data:`INLINE` instead."""
    await create_topics(stage.settings, partitions=partitions)
    inline = set(inline)
    async with await Store.connect(stage.database_url) as store:
        for agent in agents:
            stored = await store.set_config(agent, INLINE if agent in inline else config or SUITABILITY)
            await publish_config(stage.settings, agent, stored.model_dump())


MALFORMED = (b"{not json", b'{"draft_id": "x"}', b"[1, 2]", None)


def draft_record(stage_run: str, n: int, agent: str) -> tuple[bytes, bytes]:
    body = {"draft_id": f"{stage_run}-{n}", "agent_id": agent, "run_id": stage_run,
            "text": f"{agent} proposes idea {n} for the paper sale"}  # fmt: skip
    return agent.encode(), orjson.dumps(body)


def malformed_record(stage_run: str, n: int, agent: str) -> tuple[bytes, bytes | None]:
    """Bad input of several kinds: not JSON, missing fields, not an object, no value, a NUL, a key mismatch."""
    draft_id = f"{stage_run}-bad{n}"
    nul = orjson.dumps({"draft_id": draft_id, "agent_id": agent, "text": "a\u0000b"})
    wrong_key = orjson.dumps({"draft_id": draft_id, "agent_id": "someone-else", "text": "hi"})
    kinds: list[bytes | None] = [*MALFORMED, nul, wrong_key]
    return agent.encode(), kinds[n % len(kinds)]


@dataclass
class Stream:
    """What was sent: valid drafts by id and the number of malformed records."""

    run_id: str
    drafts: set[str] = field(default_factory=set)
    malformed: int = 0
    finished_at: float = 0.0


async def send_stream(stage: Stage, agents: list[str], count: int, rate: float, malformed_every: int = 0) -> Stream:
    """``count`` valid drafts round-robin over ``agents`` at ``rate`` per second, a malformed record after every
    ``malformed_every`` drafts."""
    stream = Stream(run_id=f"{stage.prefix}run")
    topic = Topics(stage.prefix).drafts
    producer = AIOKafkaProducer(**client_kwargs(stage.settings), linger_ms=5, acks="all")
    await producer.start()
    started = time.monotonic()
    try:
        for n in range(count):
            agent = agents[n % len(agents)]
            key, value = draft_record(stream.run_id, n, agent)
            await producer.send(topic, value, key=key)
            stream.drafts.add(f"{stream.run_id}-{n}")
            if malformed_every and n % malformed_every == malformed_every - 1:
                key, bad = malformed_record(stream.run_id, stream.malformed, agent)
                await producer.send(topic, bad, key=key)
                stream.malformed += 1
            if (ahead := started + (n + 1) / rate - time.monotonic()) > 0:
                await asyncio.sleep(ahead)
        await producer.flush()
    finally:
        await producer.stop()
    stream.finished_at = time.monotonic()
    return stream


async def read_all(settings: Settings, topic: str, until: Callable[[list[Any]], bool], timeout_s: float) -> list[Any]:
    """Every record of ``topic`` from the beginning, read until ``until(records)`` holds or the time is up."""
    consumer = kafka_consumer(settings, fetch_max_wait_ms=50, enable_auto_commit=False)
    await consumer.start()
    try:
        partitions = [TopicPartition(topic, p) for p in sorted(await _partitions(consumer, topic))]
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        records: list[Any] = []
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for batch in (await consumer.getmany(timeout_ms=300, max_records=5000)).values():
                records.extend(batch)
            if until(records):
                break
        return records
    finally:
        await consumer.stop()


async def _partitions(consumer: AIOKafkaConsumer, topic: str) -> set[int]:
    partitions = consumer.partitions_for_topic(topic)
    if not partitions:
        await consumer.topics()
        partitions = consumer.partitions_for_topic(topic)
    return set(partitions or ())


@dataclass
class Verdicts:
    """Verdicts read back: decisions seen per (draft_id, attempt) and every record's (partition, timestamp s)."""

    seen: dict[tuple[str, int], set[tuple[str, ...]]] = field(default_factory=lambda: defaultdict(set))
    records: int = 0
    timed_out: int = 0
    max_latency_ms: float = 0.0
    times: list[tuple[int, float]] = field(default_factory=list)

    @property
    def conflicting(self) -> int:
        return sum(1 for decisions in self.seen.values() if len(decisions) > 1)


def tally(records: list[Any], run_id: str) -> Verdicts:
    out = Verdicts()
    for record in records:
        verdict = orjson.loads(record.value)
        if not str(verdict["draft_id"]).startswith(run_id):
            continue
        out.records += 1
        scores = orjson.dumps(verdict["scores"], option=orjson.OPT_SORT_KEYS).decode()
        decision = (verdict["decision"], verdict["outcome"], verdict["text"], scores)
        out.seen[(verdict["draft_id"], verdict["attempt"])].add(decision)
        out.timed_out += any(s.get("timed_out") for s in verdict["scores"].values())
        out.max_latency_ms = max(out.max_latency_ms, float(verdict["latency_ms"]))
        out.times.append((record.partition, record.timestamp / 1000.0))
    return out


async def collect_verdicts(stage: Stage, stream: Stream, timeout_s: float) -> Verdicts:
    """Read verdicts until every draft of ``stream`` has one (or the time is up)."""

    def complete(records: list[Any]) -> bool:
        ids = {orjson.loads(r.value)["draft_id"] for r in records}
        return stream.drafts <= ids

    records = await read_all(stage.settings, Topics(stage.prefix).verdicts, complete, timeout_s)
    return tally(records, stream.run_id)


async def dead_letters(stage: Stage, expected: int, timeout_s: float = 20.0) -> tuple[int, list[str]]:
    """Distinct source records (topic, partition, offset) in the dead-letter topic, and their distinct reasons."""

    def distinct(records: list[Any]) -> dict[tuple[str, int, int], str]:
        letters = (orjson.loads(r.value) for r in records)
        return {(d["source_topic"], d["partition"], d["offset"]): d["error"] for d in letters}

    records = await read_all(stage.settings, Topics(stage.prefix).dlq, lambda rs: len(distinct(rs)) >= expected,
                             timeout_s)  # fmt: skip
    found = distinct(records)
    return len(found), sorted({reason[:160] for reason in found.values()})


async def correction_rows(stage: Stage, run_id: str, expected: int, timeout_s: float = 60.0) -> tuple[int, int]:
    """(rows, duplicate rows) of ``correction_logs`` for ``run_id``, once ``expected`` rows are in or time is up."""
    async with await Store.connect(stage.database_url) as store:
        deadline = time.monotonic() + timeout_s
        while True:
            row = await store.pool.fetchrow(
                "SELECT count(*) AS n, count(DISTINCT (draft_id, attempt_number)) AS d FROM correction_logs "
                "WHERE run_id = $1", run_id)  # fmt: skip
            assert row is not None
            if row["n"] >= expected or time.monotonic() > deadline:
                return int(row["n"]), int(row["n"]) - int(row["d"])
            await asyncio.sleep(0.5)


async def message_ids(stage: Stage, run_id: str, expected: int, timeout_s: float = 60.0) -> set[str]:
    """``run_messages`` ids of ``run_id`` once ``expected`` rows are in (or time is up), then once more after the
    sinks had a moment to write anything beyond them."""
    sql = "SELECT message_id FROM run_messages WHERE run_id = $1"
    async with await Store.connect(stage.database_url) as store:
        deadline = time.monotonic() + timeout_s
        while len(await store.pool.fetch(sql, run_id)) < expected and time.monotonic() < deadline:
            await asyncio.sleep(0.5)
        await asyncio.sleep(2.0)  # rows beyond the expected ones would be a defect: give them time to show
        return {str(row["message_id"]) for row in await store.pool.fetch(sql, run_id)}


@asynccontextmanager
async def advisory_lock(stage: Stage, key: int) -> AsyncIterator[None]:
    """Hold PostgreSQL's session-level advisory lock ``key`` (on a connection of its own) inside the block."""
    async with await Store.connect(stage.database_url) as store, store.pool.acquire() as conn:
        await conn.execute("SELECT pg_advisory_lock($1)", key)
        try:
            yield
        finally:
            await conn.execute("SELECT pg_advisory_unlock($1)", key)


def recovery_s(verdicts: Verdicts, kills: list[float]) -> float:
    """For each kill (wall-clock seconds), the time until every partition produced a verdict again; the worst."""
    worst = 0.0
    partitions = {p for p, _ in verdicts.times}
    for killed in kills:
        for partition in partitions:
            after = [t for p, t in verdicts.times if p == partition and t > killed]
            if after:
                worst = max(worst, min(after) - killed)
    return round(worst, 2)
