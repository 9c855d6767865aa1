"""Memory follows the active agents (issue 22): a worker's RSS after two waves of new agents separated by more
than the idle TTL.

A private stack (Tansu + PostgreSQL in a temp dir) and one ``drift worker`` (offline judge, sinks inside the
worker, ``DRIFT_AGENT_IDLE_TTL_S`` = ``DRIFT_PENDING_TTL_S`` = ``--ttl``, ``DRIFT_EVAL_WINDOW_S`` = half of it: the
windowed message counts expire after two windows, before the idle TTL, as they do with the defaults). Each wave
sends one draft from each of ``--agents`` new agent ids (default configuration: decided inline and committed, so
every agent gets a configuration, a ``recent-messages`` entry, a history-view entry, a verdict record, a
correction log and a message) and waits until the worker has judged them all and the sinks have caught up
(``/stats``, ``/metrics``). Between the waves it waits until ``drift_agents_in_memory`` is back to 0 (more than
the TTL of silence).

Reported: the worker's RSS at rest (after a warm-up wave of 200 agents), after wave 1 and after wave 2; KB per
active agent = (after wave 1 − at rest) ÷ agents; wave 2 ÷ wave 1 (the target: within 10 %). Then the same on
a fresh stack whose worker never evicts (TTLs of a year: the behaviour before issue 22), for comparison. Run
from the repository root: ``.venv/bin/python -m ops.bench.memory [--agents N] [--ttl S] [--no-baseline]``;
merges the ``memory_*`` keys into results.json.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import orjson
from aiokafka import AIOKafkaProducer

from engine.settings import MAX_TTL_S, Settings
from ops.bench.common import RESULTS_PATH, machine_info, merge_results
from streams.embedded import WorkerProcess, free_port, start_stack
from streams.services.eviction import sweep_interval
from streams.services.sinklag import LAG_INTERVAL_S
from streams.store import Store
from streams.wire.kafka import create_topics

PREFIX = "bench-mem."
WARMUP = 200
TEXT = "Quarterly numbers look fine, but somebody keeps moving my stapler into the jello again."


def rss_mb(pid: int) -> float:
    """Resident set size of process ``pid`` (Linux ``/proc``), in MB."""
    status = Path(f"/proc/{pid}/status").read_text()
    found = re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE)
    if found is None:
        raise RuntimeError(f"no VmRSS for process {pid}")
    return int(found.group(1)) / 1024


class Probe:
    """The worker's pages: judged attempts, agents in memory, the sinks' lag."""

    def __init__(self, port: str) -> None:
        self.base = f"http://127.0.0.1:{port}"

    def attempts(self) -> int:
        return int(httpx.get(f"{self.base}/stats", timeout=10).json()["attempts"])

    def metric(self, name: str) -> float:
        text = httpx.get(f"{self.base}/metrics", timeout=10).text
        return sum(float(v) for v in re.findall(rf"^drift_{name}(?:\{{[^}}]*\}})? (\S+)$", text, re.MULTILINE))

    async def until(self, check: Any, what: str, timeout_s: float) -> float:
        started = time.monotonic()
        while not check():
            if time.monotonic() - started > timeout_s:
                raise SystemExit(f"timed out waiting for {what}")
            await asyncio.sleep(0.5)
        return time.monotonic() - started


async def wave(settings: Settings, probe: Probe, agents: int, tag: str) -> float:
    """Send one draft from each of ``agents`` new agents and wait until all are judged and stored."""
    before = probe.attempts()
    producer = AIOKafkaProducer(bootstrap_servers=settings.broker, linger_ms=20, max_batch_size=256 * 1024)
    await producer.start()
    started = time.monotonic()
    try:
        topic = settings.topic("drafts")
        for i in range(agents):
            agent = f"{tag}-{i}"
            draft = {"draft_id": f"{agent}-d", "agent_id": agent, "text": f"{TEXT} ({i})"}
            await producer.send(topic, orjson.dumps(draft), key=agent.encode())
        await producer.flush()
    finally:
        await producer.stop()
    await probe.until(lambda: probe.attempts() >= before + agents, f"{agents} verdicts", 60 + agents / 50)
    await asyncio.sleep(LAG_INTERVAL_S + 1)  # the lag gauge is measured every LAG_INTERVAL_S: a fresh value
    await probe.until(lambda: probe.metric("sink_lag_records") == 0, "the sinks", 60 + agents / 100)
    return time.monotonic() - started


async def settled_rss(pid: int) -> float:
    """RSS once the worker is quiet (the last batches and timers done)."""
    await asyncio.sleep(3.0)
    return rss_mb(pid)


async def silence(probe: Probe, ttl_s: float, evicting: bool, what: str) -> float:
    """Wait until every agent is evicted (or, without eviction, as long as that took with it: TTL + a sweep)."""
    if evicting:
        return await probe.until(lambda: probe.metric("agents_in_memory") == 0, what, ttl_s * 4 + 120)
    await asyncio.sleep(ttl_s + sweep_interval(Settings(agent_idle_ttl_s=ttl_s, pending_ttl_s=ttl_s)))
    return ttl_s


async def measure(
    settings: Settings, worker: WorkerProcess, agents: int, ttl_s: float, evicting: bool
) -> dict[str, float]:
    assert worker.process is not None
    pid, probe = worker.process.pid, Probe(worker.env["DRIFT_WEB_PORT"])
    run = uuid.uuid4().hex[:6]
    await wave(settings, probe, WARMUP, f"warm-{run}")
    await silence(probe, ttl_s, evicting, "the warm-up agents to go")
    rest = await settled_rss(pid)
    first_s = await wave(settings, probe, agents, f"a-{run}")
    held = probe.metric("agents_in_memory")
    first = await settled_rss(pid)
    idle_s = await silence(probe, ttl_s, evicting, "eviction")
    second_s = await wave(settings, probe, agents, f"b-{run}")
    second = await settled_rss(pid)
    print(f"{'' if evicting else 'no eviction: '}wave 1: {agents} agents in {first_s:.1f} s ({held:.0f} held in "
          f"memory after it); {idle_s:.1f} s of silence; wave 2 in {second_s:.1f} s")  # fmt: skip
    return {
        "memory_rss_rest_mb": round(rest, 1),
        "memory_rss_wave1_mb": round(first, 1),
        "memory_rss_wave2_mb": round(second, 1),
        "memory_kb_per_agent": round((first - rest) * 1024 / agents, 2),
        "memory_agents_held_after_wave1": held,
        "memory_wave2_vs_wave1": round(second / first, 4),
    }


def run(agents: int, ttl_s: float, evicting: bool = True) -> dict[str, float]:
    """One stack and worker; without ``evicting`` the worker's TTLs are a year (the behaviour before issue 22)."""
    stack = start_stack()
    worker = None
    try:
        settings = Settings(broker=stack.broker.bootstrap, database_url=stack.database.url, topic_prefix=PREFIX)

        async def prepare() -> None:
            async with await Store.connect(stack.database.url) as store:
                await store.migrate()
            await create_topics(settings)

        asyncio.run(prepare())
        env = {"DRIFT_BROKER": settings.broker, "DRIFT_DATABASE_URL": settings.database_url,
               "DRIFT_WEB_PORT": str(free_port())}  # fmt: skip
        for name in ("DRIFT_AGENT_IDLE_TTL_S", "DRIFT_PENDING_TTL_S"):
            env[name] = str(ttl_s if evicting else MAX_TTL_S)
        env["DRIFT_EVAL_WINDOW_S"] = str(ttl_s / 2)  # counts expire with 2 windows: before the TTL, as by default
        worker = WorkerProcess.for_prefix(env, stack.root / "worker.log", "--prefix", PREFIX, "--judge", "offline")
        worker.start(60.0)
        return asyncio.run(measure(settings, worker, agents, ttl_s, evicting))
    finally:
        if worker is not None:
            worker.stop()
        stack.stop()
        shutil.rmtree(stack.root, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m ops.bench.memory", description=__doc__.split("\n")[0])
    parser.add_argument("--agents", type=int, default=50_000, help="new agents per wave (default 50,000)")
    parser.add_argument("--ttl", type=float, default=20.0, help="the worker's idle and pending TTLs (default 20 s)")
    parser.add_argument("--no-baseline", action="store_true", help="skip the same run without eviction")
    args = parser.parse_args(argv)
    info = machine_info()
    print(f"machine: {info['cpu']}, {info['cores']} cores, Python {info['python']}, {info['platform']}")
    out = run(args.agents, args.ttl)
    if not args.no_baseline:
        before = run(args.agents, args.ttl, evicting=False)
        out["memory_wave2_vs_wave1_no_eviction"] = before["memory_wave2_vs_wave1"]
        out["memory_rss_wave1_no_eviction_mb"] = before["memory_rss_wave1_mb"]
        out["memory_rss_wave2_no_eviction_mb"] = before["memory_rss_wave2_mb"]
        out["memory_kb_per_agent_no_eviction"] = before["memory_kb_per_agent"]  # every agent of the wave held
    for key, value in out.items():
        print(f"  {key:<26}{value:>10.2f}")
    held = "ok" if out["memory_wave2_vs_wave1"] <= 1.10 else "MISSED"
    print(f"  target: RSS after wave 2 within 10 % of RSS after wave 1: {held}")
    merge_results(RESULTS_PATH, {**out, "memory_agents_per_wave": args.agents})
    print(f"written to {RESULTS_PATH}")


if __name__ == "__main__":
    main()
