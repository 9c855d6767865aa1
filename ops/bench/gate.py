"""Gate benchmarks on the embedded broker, measured side by side in one run.

- ``passthrough_msgs_per_s``: a raw aiokafka consume → produce loop on the same broker (the ceiling);
- ``gate_algorithmic_drafts_per_s``: the gate with similarity on for 200 agents, no LLM dimension, every output
  record written (verdict, message, correction log);
- ``llm_gate_*``: four LLM dimensions through the real ``anthropic`` SDK against the local Messages-API server
  answering after 200 ms, 200 agents, parallel (ours) and sequential (TinyTroupe's way), with the worker's CPU time
  per judged draft (``llm_gate_worker_cpu_ms_per_draft``: at the offered load the verdict waits mostly for CPU);
- ``judge_input_tokens_per_check`` / ``judge_cacheable_prefix_fraction``: from the prompts actually sent;
- ``sink_rows_per_s``: correction-log rows into PostgreSQL; ``worker_ready_s``: process start → partitions.

Run with ``python -m ops.bench.gate`` (or ``make bench`` for every benchmark).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from engine.settings import Settings
from ops.bench.common import RESULTS_PATH, create_topics_named, merge_results, process_cpu_s
from ops.bench.hop import broker_hop_ms
from streams.embedded import EmbeddedStack, WorkerProcess, free_port, start_stack
from streams.store import Store
from streams.wire.kafka import create_topics
from streams.wire.payloads import CorrectionLog

AGENTS = 200
#: a worker's start on a loaded machine (other helpers' suites) can take well over the idle 6 s
WORKER_START_S = 180.0
WORDS = ("paper", "beets", "sales", "client", "party", "memo", "stapler", "jello", "branch", "quota", "printer",
         "coffee", "bears", "report", "deal", "meeting", "office", "warehouse", "cat", "pretzel")  # fmt: skip


VOCABULARY = tuple(f"{WORDS[i % len(WORDS)]}{i // len(WORDS)}" for i in range(4000))


def draft_text(n: int) -> str:
    """~40 words: a few office words and a long tail, so that most drafts pass the similarity check."""
    rng = np.random.default_rng(n)
    return " ".join(VOCABULARY[int(i)] for i in rng.zipf(1.3, 40) % len(VOCABULARY))


async def _produce(broker: str, topic: str, records: list[tuple[bytes, bytes]]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=broker, linger_ms=5, max_batch_size=256 * 1024)
    await producer.start()
    try:
        for key, value in records:
            await producer.send(topic, value, key=key)
        await producer.flush()
    finally:
        await producer.stop()


async def _consume_count(broker: str, topic: str, count: int, timeout_s: float) -> list[float]:
    """Arrival times of ``count`` records of ``topic`` read from the start."""
    consumer = AIOKafkaConsumer(bootstrap_servers=broker, fetch_max_wait_ms=10, enable_auto_commit=False)
    await consumer.start()
    try:
        await consumer.topics()
        tps = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or set()]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        arrivals: list[float] = []
        deadline = time.monotonic() + timeout_s
        while len(arrivals) < count and time.monotonic() < deadline:
            batch = await consumer.getmany(timeout_ms=100, max_records=5000)
            now = time.monotonic()
            arrivals.extend(now for records in batch.values() for _ in records)
        return arrivals
    finally:
        await consumer.stop()


async def passthrough(broker: str, n: int = 60_000) -> float:
    """Raw aiokafka: consume every record of one topic and produce it to another; records per second."""
    source, sink = f"pt-in-{uuid.uuid4().hex[:6]}", f"pt-out-{uuid.uuid4().hex[:6]}"
    await create_topics_named(broker, [source, sink])
    await _produce(broker, source, [(b"k%d" % (i % AGENTS), b"x" * 300) for i in range(n)])
    consumer = AIOKafkaConsumer(source, bootstrap_servers=broker, fetch_max_wait_ms=10, group_id=None,
                                auto_offset_reset="earliest", max_poll_records=5000)  # fmt: skip
    producer = AIOKafkaProducer(bootstrap_servers=broker, linger_ms=5, max_batch_size=256 * 1024)
    await consumer.start()
    await producer.start()
    try:
        done = 0
        started = time.monotonic()
        while done < n:
            batch = await consumer.getmany(timeout_ms=100, max_records=5000)
            for records in batch.values():
                for record in records:
                    await producer.send(sink, record.value, key=record.key)
                done += len(records)
        await producer.flush()
        return n / (time.monotonic() - started)
    finally:
        await consumer.stop()
        await producer.stop()


async def _configure(settings: Settings, agents: list[str], changes: dict[str, Any]) -> None:
    async with await Store.connect(settings.database()) as store:
        await store.migrate()
        for agent in agents:
            await store.set_config(agent, changes)


def _worker(
    stack: EmbeddedStack, settings: Settings, judge: str, env: dict[str, str] | None = None, extra: tuple[str, ...] = ()
) -> WorkerProcess:
    environ = {"DRIFT_BROKER": settings.broker, "DRIFT_DATABASE_URL": settings.database(),
               "DRIFT_WEB_PORT": str(free_port()), **(env or {})}  # fmt: skip
    log = stack.root / f"worker-{settings.topic_prefix.strip('.')}.log"
    return WorkerProcess.for_prefix(environ, log, "--prefix", settings.topic_prefix, "--judge", judge, *extra)


SINK_LAYOUTS = {
    "none": ("alg.", "gate_algorithmic_drafts_per_s"),
    "process": ("alg-sp.", "gate_algorithmic_sinks_process_drafts_per_s"),
    "inprocess": ("alg-in.", "gate_algorithmic_inprocess_sinks_drafts_per_s"),
}


async def gate_algorithmic(
    stack: EmbeddedStack, n: int = 30_000, *, sinks: str = "none", round_no: int = 0
) -> dict[str, float]:
    """Drafts are queued first, then a worker starts: throughput is measured from first to last verdict.

    ``sinks`` places the Postgres sinks: ``none`` measures the gate worker alone (``--no-sinks``; the sinks are
    measured by ``sink_rows_per_s``), ``process`` runs a ``drift sinks`` process beside it (the production
    layout on one machine: both share its two cores), ``inprocess`` runs them inside the worker.
    """
    prefix, key = SINK_LAYOUTS[sinks]
    prefix = f"{prefix[:-1]}{round_no}."
    settings = Settings(broker=stack.broker.bootstrap, database_url=stack.database.url, topic_prefix=prefix)
    agents = [f"agent-{i}" for i in range(AGENTS)]
    await create_topics(settings)
    await _configure(settings, agents, {"gate_similarity_enabled": True})
    drafts = [
        (agents[i % AGENTS].encode(),
         orjson.dumps({"draft_id": f"d{i}", "agent_id": agents[i % AGENTS], "text": draft_text(i)}))
        for i in range(n)
    ]  # fmt: skip
    await _produce(settings.broker, settings.topic("drafts"), drafts)
    beside = _sinks(stack, settings) if sinks == "process" else None
    started = time.monotonic()
    worker = _worker(stack, settings, "offline", extra=() if sinks == "inprocess" else ("--no-sinks",))
    worker.start(timeout_s=WORKER_START_S)
    ready_s = time.monotonic() - started
    try:
        arrivals = await _consume_count(settings.broker, settings.topic("verdicts"), n, timeout_s=300)
    finally:
        worker.stop()
        if beside is not None:
            beside.stop()
    if len(arrivals) < n:
        raise RuntimeError(f"only {len(arrivals)} of {n} verdicts arrived")
    rate = n / (arrivals[-1] - arrivals[0])
    return {key: rate, "worker_ready_s": ready_s} if sinks == "none" else {key: rate}


async def faust_floor(stack: EmbeddedStack, n: int = 30_000, *, round_no: int = 0) -> float:
    """The same queued drafts through ops.bench.faust_floor (ack + three sends, nothing else)."""
    settings = Settings(broker=stack.broker.bootstrap, database_url=stack.database.url,
                        topic_prefix=f"floor{round_no}.")  # fmt: skip
    await create_topics(settings)
    drafts = [
        (b"agent-%d" % (i % AGENTS), orjson.dumps({"draft_id": f"d{i}", "text": draft_text(i)})) for i in range(n)
    ]
    await _produce(settings.broker, settings.topic("drafts"), drafts)
    args = [sys.executable, "-m", "ops.bench.faust_floor", settings.broker, settings.topic_prefix]
    env = {**os.environ, "DRIFT_WEB_PORT": str(free_port())}
    worker = WorkerProcess(args, env, stack.root / "floor.log").start(timeout_s=WORKER_START_S)
    try:
        arrivals = await _consume_count(settings.broker, settings.topic("verdicts"), n, timeout_s=120)
    finally:
        worker.stop()
    return n / (arrivals[-1] - arrivals[0])


ROUNDS = 3


async def gate_vs_passthrough(stack: EmbeddedStack) -> dict[str, float]:
    """The ceiling, the gate and the bare Faust agent measured in alternation, three rounds; medians, and the
    medians of the paired ratios (a noisy machine moves the numbers of a round together)."""
    ceilings, gates, floors, ready = [], [], [], []
    for round_no in range(ROUNDS):
        ceilings.append(await passthrough(stack.broker.bootstrap))
        found = await gate_algorithmic(stack, sinks="none", round_no=round_no)
        gates.append(found["gate_algorithmic_drafts_per_s"])
        ready.append(found["worker_ready_s"])
        floors.append(await faust_floor(stack, round_no=round_no))
        print(f"round {round_no + 1}: passthrough {ceilings[-1]:,.0f}/s, gate {gates[-1]:,.0f}/s, "
              f"faust floor {floors[-1]:,.0f}/s", flush=True)  # fmt: skip
    return {
        "passthrough_msgs_per_s": float(np.median(ceilings)),
        "gate_algorithmic_drafts_per_s": float(np.median(gates)),
        "faust_floor_drafts_per_s": float(np.median(floors)),
        "gate_vs_passthrough": float(np.median([g / c for g, c in zip(gates, ceilings, strict=True)])),
        "gate_vs_faust_floor": float(np.median([g / f for g, f in zip(gates, floors, strict=True)])),
        "worker_ready_s": float(np.median(ready)),
    }


def _sinks(stack: EmbeddedStack, settings: Settings) -> WorkerProcess:
    environ = {"DRIFT_BROKER": settings.broker, "DRIFT_DATABASE_URL": settings.database()}
    process = WorkerProcess.for_prefix(environ, stack.root / "sinks.log", "--prefix", settings.topic_prefix)
    process.args[process.args.index("worker")] = "sinks"
    return process.start(timeout_s=60)


async def sink_rows(stack: EmbeddedStack, n: int = 20_000, batch: int = 500) -> float:
    """Correction-log rows per second through Store.write_correction_logs in the sink's batch size."""
    logs = [
        CorrectionLog(draft_id=f"s{i}", attempt_number=1, agent_id=f"agent-{i % AGENTS}", original_text=draft_text(i),
                      dimension_scores={"adherence": {"score": 7.0, "reasoning": "fine"}}, decision="commit",
                      outcome="passed")
        for i in range(n)
    ]  # fmt: skip
    async with await Store.connect(stack.database.url) as store:
        await store.migrate()
        started = time.monotonic()
        for i in range(0, n, batch):
            await store.write_correction_logs(logs[i : i + batch])
        return n / (time.monotonic() - started)


JUDGE_DELAY_MS = 200
LLM_DIMENSIONS = {f"gate_{d}_enabled": True for d in ("adherence", "consistency", "fluency", "suitability")}


def _fake_messages_api(port: int) -> subprocess.Popen[bytes]:
    """The local Messages-API server (a test double) in its own process, answering after 200 ms."""
    args = [sys.executable, "-m", "ops.fakes.messages_api", "--port", str(port), "--delay-ms", str(JUDGE_DELAY_MS),
            "--score", "8"]  # fmt: skip
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert process.stdout is not None
    process.stdout.readline()  # "listening on ..."
    return process


async def judge_latency_ms(base_url: str, calls: int = 20) -> float:
    """Median latency of one judge call through the real anthropic SDK against the local server."""
    from engine.judges.anthropic import AnthropicJudge
    from engine.judges.base import Claim, JudgeMode, JudgeRequest

    judge = AnthropicJudge(api_key="bench-not-a-key", base_url=base_url)
    request = JudgeRequest(JudgeMode.SCORE, (Claim("c1", "Michael tells a story"),), "Michael Scott",
                           action="Let me tell you about the time I saved the branch.")  # fmt: skip
    latencies = []
    try:
        for _ in range(calls):
            started = time.monotonic()
            await judge.evaluate(request)
            latencies.append((time.monotonic() - started) * 1000)
    finally:
        await judge.aclose()
    return float(np.median(latencies))


async def llm_gate(stack: EmbeddedStack, base_url: str, *, parallel: bool, drafts: int = 400,
                   rate_per_s: float = 40.0, staged: bool = False) -> dict[str, float]:  # fmt: skip
    """Four LLM dimensions for 200 agents through the real SDK; drafts arrive at a steady rate. ``staged``:
    DRIFT_GATE_SHARE_PREFIX, the first dimension of each prompt prefix before the others."""
    from streams.client import GateClient

    prefix = "llm-stg." if staged else "llm-par." if parallel else "llm-seq."
    settings = Settings(broker=stack.broker.bootstrap, database_url=stack.database.url, topic_prefix=prefix)
    agents = [f"agent-{i}" for i in range(AGENTS)]
    await create_topics(settings)
    await _configure(settings, agents, LLM_DIMENSIONS)
    env = {"ANTHROPIC_API_KEY": "bench-not-a-key", "DRIFT_ANTHROPIC_BASE_URL": base_url,
           "DRIFT_JUDGE_CONCURRENCY": "2048", "DRIFT_JUDGE_DEADLINE_S": "10",
           "DRIFT_GATE_PARALLEL": "true" if parallel else "false",
           "DRIFT_GATE_SHARE_PREFIX": "true" if staged else "false"}  # fmt: skip
    worker = _worker(stack, settings, "anthropic", env).start(timeout_s=60)
    try:
        async with GateClient(settings=settings, timeout_s=60) as gate:
            started, cpu_before = time.monotonic(), _worker_cpu_s(worker)
            results = await asyncio.gather(*(_timed_check(gate, agents[i % AGENTS], i, started + i / rate_per_s)
                                             for i in range(drafts)))  # fmt: skip
            elapsed, cpu_s = max(done for _, done, _, _ in results) - started, _worker_cpu_s(worker) - cpu_before
    finally:
        worker.stop()
    latencies = [latency for latency, _, _, _ in results]
    usage = [u for _, _, u, _ in results]
    total = sum(u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"] for u in usage)
    cached = sum(u["cache_read_input_tokens"] + u["cache_creation_input_tokens"] for u in usage)
    calls = sum(u["calls"] for u in usage)
    name = "llm_gate_staged" if staged else "llm_gate" if parallel else "llm_gate_sequential"
    out = {f"{name}_p50_ms": float(np.percentile(latencies, 50)), f"{name}_p99_ms": float(np.percentile(latencies, 99)),
           f"{name}_worker_cpu_ms_per_draft": cpu_s * 1000 / drafts,
           f"{name}_in_worker_p50_ms": float(np.median([inside for _, _, _, inside in results]))}  # fmt: skip
    if parallel and not staged:
        out.update({"llm_gate_drafts_per_s": drafts / elapsed, "judge_input_tokens_per_check": total / max(calls, 1),
                    "judge_cacheable_prefix_fraction": cached / max(total, 1)})  # fmt: skip
    return out


def _worker_cpu_s(worker: WorkerProcess) -> float:
    """The worker's CPU time so far (NaN where ``/proc`` cannot tell): per judged draft, what the gate costs a
    core beside the judge's own latency."""
    cpu = process_cpu_s(worker.process.pid) if worker.process is not None else None
    return float("nan") if cpu is None else cpu


async def _timed_check(gate: Any, agent: str, n: int, at: float) -> tuple[float, float, dict[str, int], float]:
    """The draft's round trip (ms), when it ended, its token usage, and the part spent in the worker (ms: the
    verdict's ``latency_ms``, from its lane batch to the verdict): the rest is the two trips through the broker."""
    await asyncio.sleep(max(0.0, at - time.monotonic()))
    sent = time.monotonic()
    verdict = await gate.check(agent_id=agent, text=draft_text(n), channel="#general")
    done = time.monotonic()
    usage = verdict.token_usage.model_dump()
    usage["calls"] = sum(1 for s in verdict.scores.values() if not s.timed_out and s.reasoning)
    return (done - sent) * 1000, done, usage, verdict.latency_ms


async def run_async(stack: EmbeddedStack, parts: tuple[str, ...] = ("throughput", "llm")) -> dict[str, float]:
    results: dict[str, float] = {}
    if "throughput" in parts:
        results.update(await gate_vs_passthrough(stack))
        for layout in ("process", "inprocess"):
            results.update(await gate_algorithmic(stack, sinks=layout))
        results["sink_rows_per_s"] = await sink_rows(stack)
    if "llm" in parts:
        results.update(await llm_part(stack))
    return results


async def llm_part(stack: EmbeddedStack) -> dict[str, float]:
    """One judge call's latency, then the LLM gate side by side: parallel, staged, sequential."""
    results: dict[str, float] = {}
    port = free_port()
    server = _fake_messages_api(port)
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait_ms = Settings().fetch_brisk_wait_ms  # the worker's and the client's while drafts flow
        results["broker_hop_p50_ms"] = await broker_hop_ms(stack.broker.bootstrap, fetch_max_wait_ms=wait_ms)
        results["judge_latency_ms"] = await judge_latency_ms(base_url)
        results.update(await llm_gate(stack, base_url, parallel=True))
        results.update(await llm_gate(stack, base_url, parallel=True, staged=True))
        results.update(await llm_gate(stack, base_url, parallel=False))
    finally:
        server.terminate()
        server.wait()
    results["llm_gate_p50_vs_judge"] = results["llm_gate_p50_ms"] / results["judge_latency_ms"]
    results["llm_gate_in_worker_vs_judge"] = results["llm_gate_in_worker_p50_ms"] / results["judge_latency_ms"]
    results["llm_gate_staged_p50_vs_judge"] = results["llm_gate_staged_p50_ms"] / results["judge_latency_ms"]
    return results


def run(root: Path | None = None, parts: tuple[str, ...] = ("throughput", "llm")) -> dict[str, float]:
    stack = start_stack(root)
    try:
        return asyncio.run(run_async(stack, parts))
    finally:
        stack.stop()


if __name__ == "__main__":
    chosen = tuple(sys.argv[1:]) or ("throughput", "llm")  # e.g. ``python -m ops.bench.gate llm``
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    found = run(parts=chosen)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    for key, value in sorted(found.items()):
        print(f"{key:<36} {value:,.3f}")
    merge_results(RESULTS_PATH, {k: round(v, 4) for k, v in found.items()})
