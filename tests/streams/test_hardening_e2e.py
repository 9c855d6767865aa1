"""End-to-end (issue 20, points 1-3): checks from the first draft after a restart, oversized records, every
compression codec and undecodable batches, on the embedded broker and PostgreSQL with real `drift worker`s."""

from __future__ import annotations

import base64
import hashlib
import subprocess
import uuid
from typing import Any

import httpx
import orjson
import pytest
from aiokafka import AIOKafkaProducer

from streams.client import GateClient
from streams.store import Store
from streams.wire.payloads import DEAD_LETTER_RAW_BYTES, MAX_RECORD_BYTES
from tests.stack import Scenario, Worker, eventually, read_topic
from tests.streams.batches import GZIP, broken_gzip
from tests.streams.test_gate_e2e import configure

pytestmark = pytest.mark.e2e

RULES = """
default: 9
rules:
  - proposition: "adherence-[mv]*"
    message_contains: "boring"
    value: 2
  - proposition: "adherence-[gb]*"
    value: 0
"""
MIGRATION_LOCK = 7311001  # streams.store.Store.migrate takes this advisory lock


def draft(agent: str, text: str, draft_id: str | None = None) -> bytes:
    return orjson.dumps({"draft_id": draft_id or uuid.uuid4().hex, "agent_id": agent, "text": text})


def launch(worker: Worker) -> Worker:
    """Start the worker process without waiting for its 'ready' line (it may be waiting for the database)."""
    log = open(worker.log_path, "ab")  # noqa: SIM115 - owned by the child process
    worker.process = subprocess.Popen(worker.args, env=worker.env, stdout=subprocess.DEVNULL, stderr=log)
    return worker


async def health(worker: Worker) -> tuple[int, dict[str, Any]] | None:
    url = f"http://127.0.0.1:{worker.env['DRIFT_WEB_PORT']}/health"
    try:
        async with httpx.AsyncClient(timeout=2) as client:
            response = await client.get(url)
    except httpx.HTTPError:
        return None
    try:
        return response.status_code, response.json()
    except ValueError:  # not our page
        return None


async def verdicts_for(scenario: Scenario, ids: set[str], at_least: int, timeout_s: float = 40) -> dict[str, Any]:
    """The newest verdict of each of ``ids`` (read from the start of the topic; ``at_least`` records in all)."""

    async def found() -> dict[str, Any] | None:
        records = await read_topic(scenario.settings, scenario.settings.topic("verdicts"), at_least, 3)
        mine = {v["draft_id"]: v for v in records if v["draft_id"] in ids}
        return mine if len(mine) == len(ids) else None

    return await eventually(found, timeout_s) or {}


async def test_checks_apply_from_the_first_draft_after_a_sigkill_restart(scenario: Scenario) -> None:
    angela = scenario.agent("angela")
    await scenario.create_topics()
    first = scenario.worker(judge=scenario.rules(RULES)).start()
    async with GateClient(settings=scenario.settings, timeout_s=20) as gate:
        await configure(scenario, angela, gate_adherence_enabled=True)  # returns once the worker applies it
        before = await gate.check(agent_id=angela, text="Sprinkles was a good cat.")
        assert "adherence" in before.scores
    first.kill()  # SIGKILL: no clean leave, no final commit

    # The restarted worker cannot finish opening its database while we hold the migration lock: before the fix,
    # it decided the drafts already waiting in the topic with the defaults (no check at all).
    async with await Store.connect(scenario.settings.database()) as store, store.pool.acquire() as conn:
        await conn.execute("SELECT pg_advisory_lock($1)", MIGRATION_LOCK)
        producer = AIOKafkaProducer(bootstrap_servers=scenario.settings.broker)
        await producer.start()
        ids = {f"after-restart-{n}" for n in range(12)}
        for draft_id in sorted(ids):
            value = draft(angela, f"A boring remark {draft_id}", draft_id)
            await producer.send_and_wait(scenario.settings.topic("drafts"), value, key=angela.encode())
        await producer.stop()
        second = launch(scenario.worker(judge=scenario.rules(RULES)))

        async def waiting_or_deciding() -> Any:
            answer = await health(second)
            if answer and "migrating" in (answer[1].get("waiting_for") or ""):
                return answer
            decided = await read_topic(scenario.settings, scenario.settings.topic("verdicts"), len(ids) + 1, 1)
            return len(decided) > 1  # the worker decided drafts while its database was not open

        seen = await eventually(waiting_or_deciding, 90)  # a process start is slow on a busy machine
        await conn.execute("SELECT pg_advisory_unlock($1)", MIGRATION_LOCK)

    verdicts = await verdicts_for(scenario, ids, len(ids) + 1, timeout_s=90)  # a restart is slow on a busy machine
    assert set(verdicts) == ids
    unchecked = [i for i, v in verdicts.items() if "adherence" not in v["scores"]]
    assert unchecked == [], f"decided without the configured check: {unchecked}"
    assert all(v["decision"] == "retry" for v in verdicts.values())  # 'boring' fails adherence
    assert seen == (503, {"ready": False, "waiting_for": "migrating the database"})  # /health said why
    assert await eventually(lambda: _ready(second))
    assert second.process is not None and second.process.poll() is None


async def _ready(worker: Worker) -> bool:
    answer = await health(worker)
    return answer is not None and answer == (200, {"ready": True, "waiting_for": None})


async def test_oversized_records_are_dead_lettered_and_the_worker_goes_on(scenario: Scenario) -> None:
    oscar = scenario.agent("oscar")
    await scenario.create_topics()
    worker = scenario.worker(judge=scenario.rules("default: 9\n")).start()
    producer = AIOKafkaProducer(bootstrap_servers=scenario.settings.broker, max_request_size=16 * 1024 * 1024)
    await producer.start()
    values = [
        draft(oscar, "x" * 700_000),  # valid JSON, 700 KB
        bytes(range(256)) * 3600,  # ~900 KB of bytes that are not JSON at all
        draft(oscar, "y" * 10_000_000),  # 10 MB
    ]
    try:
        for value in values:
            await producer.send_and_wait(scenario.settings.topic("drafts"), value, key=oscar.encode())
    finally:
        await producer.stop()
    async with GateClient(settings=scenario.settings, timeout_s=30) as gate:
        after = await gate.check(agent_id=oscar, text="Actually, that is a great point.")
    assert after.outcome == "passed"
    letters = await read_topic(scenario.settings, scenario.settings.topic("dlq"), 3)
    assert len(letters) == 3
    for letter, value in zip(sorted(letters, key=lambda x: x["offset"]), values, strict=True):
        assert letter["error"] == f"record too large: {len(value)} bytes (the maximum is {MAX_RECORD_BYTES})"
        assert (letter["raw_size"], letter["raw_truncated"]) == (len(value), True)
        assert letter["raw_sha256"] == hashlib.sha256(value).hexdigest()
        assert base64.b64decode(letter["raw"]) == value[:DEAD_LETTER_RAW_BYTES]
    assert worker.process is not None and worker.process.poll() is None


CODECS = ("gzip", "snappy", "lz4", "zstd")


async def test_drafts_in_every_codec_from_aiokafka_confluent_kafka_and_the_sdk_are_verdicted(
    scenario: Scenario,
) -> None:
    from confluent_kafka import Producer

    creed = scenario.agent("creed")
    await scenario.create_topics()
    worker = scenario.worker(judge=scenario.rules("default: 9\n")).start()
    topic, ids = scenario.settings.topic("drafts"), set()
    for codec in CODECS:
        producer = AIOKafkaProducer(bootstrap_servers=scenario.settings.broker, compression_type=codec, linger_ms=20)
        await producer.start()
        try:
            sent = [f"aiokafka-{codec}-{n}" for n in range(10)]
            for draft_id in sent:
                await producer.send(
                    topic, draft(creed, f"I sprout mung beans {draft_id}", draft_id), key=creed.encode()
                )
            await producer.flush()
            ids.update(sent)
        finally:
            await producer.stop()
        confluent = Producer({"bootstrap.servers": scenario.settings.broker, "compression.codec": codec,
                              "linger.ms": 20})  # fmt: skip
        sent = [f"confluent-{codec}-{n}" for n in range(10)]
        for draft_id in sent:
            confluent.produce(topic, draft(creed, f"I run a fake ID business {draft_id}", draft_id), creed.encode())
        assert confluent.flush(15) == 0
        ids.update(sent)
    verdicts = await verdicts_for(scenario, ids, len(ids))
    assert set(verdicts) == ids and all(v["outcome"] == "passed" for v in verdicts.values())
    for codec in CODECS:  # the client SDK produces with any codec (DRIFT_KAFKA_COMPRESSION)
        async with GateClient(settings=scenario.settings.with_(kafka_compression=codec), timeout_s=20) as gate:
            assert (await gate.check(agent_id=creed, text=f"Nobody steals from Creed, {codec}.")).outcome == "passed"
    assert worker.process is not None and worker.process.poll() is None


async def test_an_undecodable_batch_is_dead_lettered_with_its_offsets_and_gating_goes_on(scenario: Scenario) -> None:
    toby = scenario.agent("toby")
    await scenario.create_topics()
    worker = scenario.worker(judge=scenario.rules("default: 9\n")).start()
    producer = AIOKafkaProducer(bootstrap_servers=scenario.settings.broker)
    await producer.start()
    try:
        topic = scenario.settings.topic("drafts")
        partition = await _partition_of(producer, topic, toby)
        builder = producer.create_batch()
        for n in range(3):
            builder.append(key=toby.encode(), value=draft(toby, f"lost {n}"), timestamp=None)
        builder._buffer = broken_gzip(_gzip_batch(toby, 3))  # what the producer puts on the wire
        await (await producer.send_batch(builder, topic, partition=partition))
    finally:
        await producer.stop()
    async with GateClient(settings=scenario.settings, timeout_s=30) as gate:
        for n in range(3):
            assert (
                await gate.check(agent_id=toby, text=f"I hate so much about the things that you choose {n}")
            ).outcome == "passed"
    [letter] = await read_topic(scenario.settings, scenario.settings.topic("dlq"), 1)
    assert (letter["source_topic"], letter["partition"]) == (topic, partition)
    assert letter["last_offset"] - letter["offset"] == 2 and letter["raw"] == ""
    assert letter["error"].startswith("undecodable record batch: ")
    assert worker.process is not None and worker.process.poll() is None


async def _partition_of(producer: AIOKafkaProducer, topic: str, agent: str) -> int:
    from aiokafka.partitioner import DefaultPartitioner

    partitions = sorted(await producer.partitions_for(topic))
    return int(DefaultPartitioner()(agent.encode(), partitions, partitions))


def _gzip_batch(agent: str, count: int) -> bytes:
    from tests.streams.batches import batch

    return batch(0, [draft(agent, f"lost {n}") for n in range(count)], codec=GZIP, key=agent.encode())
