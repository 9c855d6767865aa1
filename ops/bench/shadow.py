"""Shadow gating beside the live gate, measured side by side in one run (issue 30's "Measured").

Workers on one embedded stack, each with its own topic prefix and the same scripted judge (every claim
answers after ``--judge-ms``, like a fast model), gate the same load at the same time: drafts of 20 agents at
``--rate`` per second to each prefix, interleaved. Shadows live in the database, not per prefix: each covers
its prefix's agents by its glob. One prefix has a shadow at ``--sample 1.0`` (a stricter
threshold: every draft is judged a second time by the candidate, after its live verdict); the other has none.

1. ``shadow_live_p50_ratio``: the live verdict's p50 (and p99) with the shadow over without it (target ≤ 1.05),
   and the shadow's rows, skips and verdicts per second (default settings);
2. on a third prefix, a candidate judge too slow to keep up (``--slow-ms`` per call on 2 shadow slots,
   ``DRIFT_SHADOW_MAX_LAG_S`` 5 s): the lane's own throughput (verdicts per second) and how many samples it
   skipped, with that prefix's live p50 and p99 beside the no-shadow prefix's under the same load.

Run: ``.venv/bin/python -m ops.bench.shadow [--rate 10] [--seconds 20]``. Prints the figures and the load average,
and merges ``shadow_*`` keys into ``ops/bench/results.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from engine.settings import Settings
from engine.shadow import Shadow
from ops.bench.common import RESULTS_PATH, merge_results
from streams.embedded import EmbeddedStack, WorkerProcess, free_port, start_stack
from streams.services.shadow import change_record
from streams.store import Store
from streams.wire.kafka import create_topics

AGENTS = 20


def rules(path: Path, delay_ms: float) -> str:
    path.write_text(f'default: 7\nrules:\n  - proposition: "*"\n    value: 7\n    delay_s: {delay_ms / 1000}\n')
    return f"scripted:{path}"


def worker(stack: EmbeddedStack, settings: Settings, judge: str, env: dict[str, str]) -> WorkerProcess:
    environ = {"DRIFT_BROKER": settings.broker, "DRIFT_DATABASE_URL": settings.database(),
               "DRIFT_WEB_PORT": str(free_port()), **env}  # fmt: skip
    log = stack.root / f"worker-{settings.topic_prefix.strip('.')}.log"
    return WorkerProcess.for_prefix(environ, log, "--prefix", settings.topic_prefix, "--judge", judge)


async def prepare(settings: Settings) -> list[str]:
    agents = [f"{settings.topic_prefix.strip('.')}-agent-{i}" for i in range(AGENTS)]
    await create_topics(settings)
    async with await Store.connect(settings.database()) as store:
        await store.migrate()
        for agent in agents:
            await store.set_config(agent, {"gate_adherence_enabled": True, "gate_adherence_threshold": 5.0})
    return agents


async def start_shadow(settings: Settings, port: str, shadow: Shadow) -> None:
    from streams.client.admin import publish

    async with await Store.connect(settings.database()) as store:
        await store.create_shadow(shadow, "bench")
        row = await store.shadow(shadow.name)
    assert row is not None
    await publish(settings, [(settings.topic("shadows"), shadow.name.encode(), change_record(row))])
    async with httpx.AsyncClient(timeout=2.0) as client:
        while shadow.name not in (await client.get(f"http://127.0.0.1:{port}/shadows")).json()["running"]:
            await asyncio.sleep(0.1)


async def load(
    gates: dict[str, Any], agents: dict[str, list[str]], rate: float, seconds: float
) -> dict[str, list[float]]:
    """The same drafts at ``rate`` per second to every prefix at once; each prefix's verdict latencies (ms)."""
    latencies: dict[str, list[float]] = {p: [] for p in gates}
    started = time.monotonic()

    async def one(prefix: str, i: int) -> None:
        await asyncio.sleep(max(0.0, started + i / rate - time.monotonic()))
        sent = time.monotonic()
        await gates[prefix].check(agent_id=agents[prefix][i % AGENTS], text=f"bench draft {i}: a line in persona")
        latencies[prefix].append((time.monotonic() - sent) * 1000)

    await asyncio.gather(*(one(p, i) for p in gates for i in range(int(rate * seconds))))
    return latencies


async def lane(settings: Settings, name: str, expected: int, timeout_s: float, since: float) -> tuple[int, int, float]:
    """Wait until the shadow accounted for ``expected`` samples (rows + skipped); its rows, skips and rows per
    second from ``since`` (epoch seconds, the phase's start) to its last row."""
    async with await Store.connect(settings.database()) as store:
        deadline = time.monotonic() + timeout_s
        while True:
            row = await store.pool.fetchrow(
                "SELECT s.skipped, count(v.draft_id) AS rows, extract(epoch FROM max(v.created_at)) - $2 AS span "
                "FROM shadows s LEFT JOIN shadow_verdicts v ON v.shadow = s.name "
                "WHERE s.name = $1 GROUP BY s.skipped", name, since)  # fmt: skip
            assert row is not None
            if row["rows"] + row["skipped"] >= expected or time.monotonic() > deadline:
                return int(row["rows"]), int(row["skipped"]), row["rows"] / max(float(row["span"] or 0), 1e-3)
            await asyncio.sleep(0.5)


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


async def run_async(stack: EmbeddedStack, args: argparse.Namespace) -> dict[str, float]:
    """Three workers: no shadow, a shadow that keeps up (default settings), a shadow that cannot keep up
    (its candidate answers after ``--slow-ms`` on 2 slots, ``DRIFT_SHADOW_MAX_LAG_S`` 5 s)."""
    plain, shadowed, overloaded = (
        Settings(broker=stack.broker.bootstrap, database_url=stack.database.url, topic_prefix=p)
        for p in ("sh-none.", "sh-on.", "sh-slow.")
    )
    agents = {s.topic_prefix: await prepare(s) for s in (plain, shadowed, overloaded)}
    judge, slow = rules(stack.root / "judge.yaml", args.judge_ms), rules(stack.root / "slow.yaml", args.slow_ms)
    envs: tuple[dict[str, str], ...] = ({}, {}, {"DRIFT_SHADOW_JUDGE_SLOTS": "2", "DRIFT_SHADOW_MAX_LAG_S": "5"})
    workers = [
        worker(stack, s, judge, env).start(timeout_s=300)
        for s, env in zip((plain, shadowed, overloaded), envs, strict=True)
    ]
    try:
        return await _measure((plain, shadowed, overloaded), workers, agents, slow, args)
    finally:
        for w in workers:
            w.stop()


async def _measure(prefixes: tuple[Settings, ...], workers: list[WorkerProcess], agents: dict[str, list[str]],
                   slow: str, args: argparse.Namespace) -> dict[str, float]:  # fmt: skip
    from streams.client import GateClient

    (plain, shadowed, overloaded), results = prefixes, dict[str, float]()
    async with contextlib.AsyncExitStack() as stack:
        gates = {
            s.topic_prefix: await stack.enter_async_context(GateClient(settings=s, timeout_s=60)) for s in prefixes
        }
        await load(gates, agents, args.rate, 3)  # warm-up: connections, caches, the first assignments
        strict = Shadow("strict", "sh-on-*", settings={"gate_adherence_threshold": 8.0}, sample=1.0)
        await start_shadow(shadowed, workers[1].env["DRIFT_WEB_PORT"], strict)
        await start_shadow(
            overloaded, workers[2].env["DRIFT_WEB_PORT"], Shadow("slow", "sh-slow-*", judge=slow, sample=1.0)
        )
        pair = {p: gates[p] for p in (plain.topic_prefix, shadowed.topic_prefix)}
        since = time.time()
        first = await load(pair, agents, args.rate, args.seconds)
        results.update(_side_by_side("shadow_live", first[plain.topic_prefix], first[shadowed.topic_prefix]))
        rows, skipped, per_s = await lane(shadowed, "strict", int(args.rate * args.seconds), 120, since)
        results.update(
            {"shadow_kept_up_rows": rows, "shadow_kept_up_skipped": skipped, "shadow_kept_up_rows_per_s": per_s}
        )
        pair = {p: gates[p] for p in (plain.topic_prefix, overloaded.topic_prefix)}
        since = time.time()
        second = await load(pair, agents, args.rate, args.seconds)
        results.update(
            _side_by_side("shadow_overloaded_live", second[plain.topic_prefix], second[overloaded.topic_prefix])
        )
        rows, skipped, per_s = await lane(overloaded, "slow", int(args.rate * args.seconds), 120, since)
        results.update({"shadow_overloaded_rows": rows, "shadow_overloaded_skipped": skipped,
                        "shadow_overloaded_rows_per_s": per_s, "shadow_slow_judge_ms": args.slow_ms})  # fmt: skip
    return results


def _side_by_side(name: str, without: list[float], with_: list[float]) -> dict[str, float]:
    return {f"{name}_p50_ms_without": pct(without, 50), f"{name}_p50_ms_with": pct(with_, 50),
            f"{name}_p99_ms_without": pct(without, 99), f"{name}_p99_ms_with": pct(with_, 99),
            f"{name}_p50_ratio": pct(with_, 50) / pct(without, 50),
            f"{name}_p99_ratio": pct(with_, 99) / pct(without, 99)}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.bench.shadow", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=10.0, help="drafts per second to each prefix")
    parser.add_argument("--seconds", type=float, default=20.0, help="length of each measured phase")
    parser.add_argument("--judge-ms", type=float, default=50.0, help="the scripted judge's answer time")
    parser.add_argument("--slow-ms", type=float, default=1000.0, help="the overloaded candidate's answer time")
    args = parser.parse_args(argv)
    before = os.getloadavg()
    stack = start_stack()
    try:
        found = asyncio.run(run_async(stack, args))
    finally:
        stack.stop()
    found["shadow_load_average_before"], found["shadow_load_average_after"] = before[0], os.getloadavg()[0]
    print(f"load average before: {before[0]:.2f}, after: {os.getloadavg()[0]:.2f} (1 min)")
    for key, value in sorted(found.items()):
        print(f"{key:<44} {value:,.3f}")
    merge_results(RESULTS_PATH, {k: round(v, 4) for k, v in found.items()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
