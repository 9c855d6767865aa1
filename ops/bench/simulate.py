"""Orchestration overhead of the session runner: 20 concurrent sessions, a scripted actor answering after 200 ms.

A private stack (Tansu + PostgreSQL in a temp dir) and one ``drift worker`` with a scripted judge that answers
at once (persona adherence on, the variety check asked every step), so the time measured beyond the actors
is the service's and the runner's: the steps round trip, the drafts and verdicts, the stimuli, Python.
The scenario is ``brainstorming-difficult-full`` (treatment arm: groups of 4, 12 steps), its first 20 sessions
run at once on the bundled tiny population.

Overhead = session wall time − the critical path of actor and judge time (per step, the slowest turn, since
the agents of a step act in parallel). Reported per agent turn (the issue's measure: ``overhead / turns``) and
per step (stricter: each step waits for one step round trip and one verdict round trip after its slowest
actor). Run from the repository root: ``.venv/bin/python -m ops.bench.simulate``; merges
``sim_overhead_per_turn_ms``, ``sim_overhead_per_step_ms`` and ``sim_overhead_vs_actor`` into results.json.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from engine.actors.scripted import ScriptedActor, ScriptedListModel, ScriptedRules
from engine.personas import load_population
from engine.settings import Settings
from engine.simulation.plan import plan_sessions
from engine.simulation.population import BUNDLED_TINY
from engine.simulation.scenario import load_scenario
from ops.bench.common import RESULTS_PATH, machine_info, merge_results
from streams.client import GateClient
from streams.client.simulate import SessionResult, Simulation
from streams.embedded import WorkerProcess, free_port, start_stack
from streams.store import Store
from streams.wire.kafka import create_topics

SESSIONS = 20
ACTOR_MS = 200.0
TARGET_RATIO = 0.10
PREFIX = "bench-sim."
# Every draft passes at once: positive claims score 9, the inverted (anti-pattern) ones 0.
RULES = """default: 9
default_check: false
rules:
  - {proposition: adherence-generic-assistant, value: 0}
  - {proposition: adherence-betrays-beliefs, value: 0}
  - {proposition: adherence-breaks-the-fourth-wall, value: 0}
"""


def start_worker(settings: Settings, root: Path, judge_rules: str = RULES) -> WorkerProcess:
    rules = root / "judge.yaml"
    rules.write_text(judge_rules, encoding="utf-8")
    env = {"DRIFT_BROKER": settings.broker, "DRIFT_DATABASE_URL": settings.database_url,
           "DRIFT_WEB_PORT": str(free_port()), "DRIFT_FETCH_MAX_WAIT_MS": str(settings.fetch_max_wait_ms)}  # fmt: skip
    worker = WorkerProcess.for_prefix(
        env, root / "worker.log", "--prefix", settings.topic_prefix, "--judge", f"scripted:{rules}"
    )
    return worker.start(60.0)


async def measure(settings: Settings) -> tuple[list[SessionResult], float]:
    scenario = load_scenario("brainstorming-difficult-full")
    personas = load_population(BUNDLED_TINY, scenario.population.fragments)
    plans = plan_sessions(scenario, list(personas), SESSIONS)
    actor = ScriptedActor(ScriptedRules(latency_ms=ACTOR_MS))
    async with GateClient(settings=settings, timeout_s=60) as gate:
        warm = Simulation(scenario, personas, actor, ScriptedListModel(), gate, "warmup")
        await warm.run_sessions(plans[:2], "treatment", 2)  # connections, caches, the worker's first steps
        sim = Simulation(scenario, personas, actor, ScriptedListModel(), gate, "bench")
        started = time.perf_counter()
        results = await sim.run_sessions(plans, "treatment", SESSIONS)
        return results, time.perf_counter() - started


@contextmanager
def running_service(prefix: str, fetch_max_wait_ms: int, judge_rules: str = RULES) -> Iterator[tuple[Settings, Path]]:
    """A private embedded stack, migrated, its topics created and one worker ready; torn down afterwards."""
    stack = start_stack()
    worker = None
    try:
        settings = Settings(broker=stack.broker.bootstrap, database_url=stack.database.url, topic_prefix=prefix,
                            fetch_max_wait_ms=fetch_max_wait_ms)  # fmt: skip

        async def prepare() -> None:
            async with await Store.connect(stack.database.url) as store:
                await store.migrate()
            await create_topics(settings)

        asyncio.run(prepare())
        worker = start_worker(settings, stack.root, judge_rules)
        yield settings, stack.root
    finally:
        if worker is not None:
            worker.stop()
        stack.stop()
        shutil.rmtree(stack.root, ignore_errors=True)


def run_measured() -> tuple[list[SessionResult], float]:
    with running_service(PREFIX, int(os.environ.get("DRIFT_FETCH_MAX_WAIT_MS", "10"))) as (settings, _):
        return asyncio.run(measure(settings))


def main() -> None:
    info = machine_info()
    print(f"machine: {info['cpu']}, {info['cores']} cores, Python {info['python']}, {info['platform']}")
    results, wall = run_measured()
    failed = [r.error for r in results if r.error]
    if failed:
        raise SystemExit(f"{len(failed)} session(s) failed: {failed[:3]}")
    overhead = sum(r.overhead_s for r in results)
    turns, steps = sum(r.turns for r in results), sum(r.steps for r in results)
    out = {
        "sim_overhead_per_turn_ms": round(overhead / turns * 1000.0, 2),
        "sim_overhead_per_step_ms": round(overhead / steps * 1000.0, 2),
    }
    out["sim_overhead_vs_actor"] = round(out["sim_overhead_per_turn_ms"] / ACTOR_MS, 4)
    drafts = sum(a.drafts for r in results for a in r.agents.values())
    print(f"{SESSIONS} concurrent sessions, {steps} steps, {turns} agent turns, {drafts} drafts, {wall:.1f} s wall")
    print(f"  mean step wait {sum(r.step_wait_s for r in results) / steps * 1000:.1f} ms, "
          f"mean verdict wait {sum(r.verdict_wait_s for r in results) / drafts * 1000:.1f} ms")  # fmt: skip
    in_gate = [v for r in results for v in r.verdict_latencies_ms]
    print(f"  of which in the gate (verdict latency_ms) mean {sum(in_gate) / max(len(in_gate), 1):.1f} ms")
    for key, value in out.items():
        print(f"  {key:<28}{value:>10.4f}")
    verdict = "ok" if out["sim_overhead_vs_actor"] <= TARGET_RATIO else "MISSED"
    print(f"  target overhead per turn ≤ {TARGET_RATIO:.0%} of the actor's {ACTOR_MS:.0f} ms: {verdict}")
    merge_results(RESULTS_PATH, out)
    print(f"written to {RESULTS_PATH}")


if __name__ == "__main__":
    main()
