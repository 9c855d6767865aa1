"""The embedded stack for end-to-end tests: a real Tansu broker, a real PostgreSQL, real `drift worker` processes.

One broker and one database serve the whole session; every test gets its own topic prefix (so its own
topics, consumer group and changelogs) and its own agent ids.
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import orjson
from aiokafka import AIOKafkaConsumer, TopicPartition

from engine.settings import Settings
from ops.chaos.common import Stage
from streams.embedded import EmbeddedBroker, EmbeddedDatabase, WorkerProcess, free_port
from streams.store import Store
from streams.wire.kafka import create_topics

REPO = Path(__file__).resolve().parents[1]
DRIFT = str(Path(sys.executable).parent / "drift")

#: The broker timing of the suite's workers and clients, not the defaults:
#:
#: - a 3 s group session (the default is 4, see group_session_timeout_s in docs/reference.md): the embedded broker's
#:   group joins take 2 s at both, and a worker that stops heartbeating without its peers ending it loses its
#:   partitions a second sooner. No test asserts a figure tied to the session timeout; those that kill workers
#:   assert what happens once the partitions moved, whenever that is;
#: - a 50 ms verdict-path fetch wait (the default is 10 ms): on the embedded broker a consumer asks about every half
#:   wait when nothing comes, so an idle worker and its broker burn 0.59 cores at 10 ms and 0.25 at 50 ms
#:   (docs/operations.md, "CPU at rest"), and the suite's workers are idle most of their lives: 14 % less CPU over
#:   three e2e files. A hop then takes up to 25 ms instead of 5; no test asserts a latency that close.
SUITE_FETCH_WAIT_MS = 50
SUITE_TIMING = {"DRIFT_GROUP_SESSION_TIMEOUT_S": "3", "DRIFT_FETCH_MAX_WAIT_MS": str(SUITE_FETCH_WAIT_MS)}


@dataclass
class Stack:
    broker: EmbeddedBroker
    database: EmbeddedDatabase

    async def own_database(self, name: str = "own", *, migrate: bool = True) -> str:
        """A fresh database on the stack's server, migrated unless told otherwise, for a test that needs one of its
        own (the shared one holds every earlier test's rows, some dated in the future); returns its URL."""
        database = f"{name}_{uuid.uuid4().hex[:8]}"
        conn = await asyncpg.connect(self.database.url)
        try:
            await conn.execute(f'CREATE DATABASE "{database}"')
        finally:
            await conn.close()
        url = self.database.url.replace("/postgres?", f"/{database}?")
        if migrate:
            async with await Store.connect(url) as store:
                await store.migrate()
        return url

    def settings(self, prefix: str, **changes: Any) -> Settings:
        changes.setdefault("fetch_max_wait_ms", SUITE_FETCH_WAIT_MS)  # the tests' own clients: SUITE_TIMING
        return Settings(broker=self.broker.bootstrap, database_url=self.database.url, topic_prefix=prefix, **changes)


class Worker(WorkerProcess):
    """A `drift worker` subprocess of a test (see :class:`streams.embedded.WorkerProcess`)."""

    def start(self, timeout_s: float = 90.0) -> Worker:
        super().start(timeout_s)  # a wait for the 'ready' line: generous, since the suite runs two tests at a time
        return self


@dataclass
class Scenario:
    """One test's slice of the stack: a topic prefix, a settings object and its workers."""

    stack: Stack
    prefix: str
    tmp: Path
    workers: list[Worker] = field(default_factory=list)

    @property
    def settings(self) -> Settings:
        return self.stack.settings(self.prefix)

    def agent(self, name: str) -> str:
        return f"{name}-{self.prefix.strip('.')}"

    def chaos_stage(self) -> Stage:
        """An ``ops.chaos`` stage on this test's slice of the shared stack (its workers with the suite's short
        group session)."""
        return Stage(self.stack.broker.bootstrap, self.stack.database.url, self.tmp, prefix=self.prefix,
                     worker_env=SUITE_TIMING)  # fmt: skip

    async def create_topics(self, partitions: int = 3) -> None:
        await create_topics(self.settings, partitions=partitions)

    def worker(self, *extra: str, judge: str | None = None, env: dict[str, str] | None = None) -> Worker:
        args = [DRIFT, "worker", "--prefix", self.prefix, *extra]
        if judge:
            args += ["--judge", judge]
        environ = {
            **os.environ,
            "DRIFT_BROKER": self.stack.broker.bootstrap,
            "DRIFT_DATABASE_URL": self.stack.database.url,
            "DRIFT_WEB_PORT": str(free_port()),
            "DRIFT_JUDGE_DEADLINE_S": "1.5",
            **SUITE_TIMING,
            **(env or {}),
        }
        environ.pop("ANTHROPIC_API_KEY", None)
        worker = Worker(args, environ, self.tmp / f"worker-{len(self.workers)}.log")
        self.workers.append(worker)
        return worker

    async def until_configured(self, agent: str, timeout_s: float = 20.0, **expected: Any) -> None:
        """Wait until every started worker gates ``agent`` with ``expected`` (its ``/configs/{agent}`` page)."""
        ports = [w.env["DRIFT_WEB_PORT"] for w in self.workers if w.process is not None and w.process.poll() is None]
        assert ports, "no worker started"

        async def applied() -> bool:
            async with httpx.AsyncClient(timeout=2.0) as client:
                for port in ports:
                    reply = await client.get(f"http://127.0.0.1:{port}/configs/{agent}")
                    config = reply.json().get("config") if reply.status_code == 200 else None
                    if not config or any(config.get(k) != v for k, v in expected.items()):
                        return False
            return True

        assert await eventually(applied, timeout_s), f"{agent}: {expected} not applied by every worker"

    def rules(self, text: str) -> str:
        path = self.tmp / f"rules-{uuid.uuid4().hex[:6]}.yaml"
        path.write_text(text)
        return f"scripted:{path}"

    def close(self) -> None:
        """The teardown: SIGKILL every worker still running. A graceful stop took 2-8 s a test (Faust's shutdown,
        the group's leave, the sinks' last flush) and asserted nothing: every test's group, topics and agents are
        its own, so what a killed worker leaves behind (a member that expires, an uncommitted offset) reaches no
        other test. The tests of an orderly stop stop their workers themselves (``worker.stop()``, SIGTERM)."""
        with ThreadPoolExecutor() as pool:
            list(pool.map(lambda worker: worker.kill(), self.workers))


async def read_records(
    broker: str, topic: str, count: int, timeout_s: float = 20.0, until: Callable[[list[Any]], bool] | None = None
) -> list[Any]:
    """Read ``count`` records of ``topic`` from the beginning (all partitions), as aiokafka delivers them; with
    ``until``, read until ``until(records)`` holds instead (or the time is up)."""
    done = until or (lambda records: len(records) >= count)
    consumer = AIOKafkaConsumer(bootstrap_servers=broker, fetch_max_wait_ms=10, enable_auto_commit=False)
    await consumer.start()
    try:
        partitions = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or set()]
        if not partitions:
            await consumer.topics()
            partitions = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or set()]
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        records: list[Any] = []
        deadline = asyncio.get_running_loop().time() + timeout_s
        while not done(records) and asyncio.get_running_loop().time() < deadline:
            batch = await consumer.getmany(timeout_ms=200)
            for messages in batch.values():
                records.extend(messages)
        return records
    finally:
        await consumer.stop()


async def read_topic(settings: Settings, topic: str, count: int, timeout_s: float = 20.0) -> list[dict[str, Any]]:
    """Read ``count`` JSON records of ``topic`` from the beginning (all partitions)."""
    return [orjson.loads(r.value) for r in await read_records(settings.broker, topic, count, timeout_s)]


async def read_topic_until(
    settings: Settings, topic: str, until: Callable[[list[dict[str, Any]]], bool], timeout_s: float = 20.0
) -> list[dict[str, Any]]:
    """Read the JSON records of ``topic`` from the beginning (all partitions) until ``until(records)`` holds or
    the time is up: a wait for a condition, where a count would be unknown."""

    def done(records: list[Any]) -> bool:
        return until([orjson.loads(r.value) for r in records])

    return [orjson.loads(r.value) for r in await read_records(settings.broker, topic, 0, timeout_s, done)]


async def eventually(check: Any, timeout_s: float = 15.0, interval_s: float = 0.2) -> Any:
    """Await ``check()`` until it returns a truthy value."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        value = await check()
        if value or asyncio.get_running_loop().time() > deadline:
            return value
        await asyncio.sleep(interval_s)


def outcomes(verdicts: Sequence[Any]) -> list[str]:
    return [v.outcome for v in verdicts]
