"""The experiment runner at ``--scale 0.05``: wall time and LLM calls per session, and the share of time
spent outside LLM calls.

A private stack (Tansu + PostgreSQL in a temp dir) and one ``drift worker`` whose scripted judge answers every
claim after 200 ms (the gate's adherence checks and the variety check), a scripted actor that answers after
200 ms and the same 200 ms scripted judge for the evaluation. ``brainstorming-average`` at ``--scale 0.05``:
2 sessions per arm (groups of 5, 11 steps, the rapporteur, the extraction), run by
:class:`streams.client.experiments.ExperimentRun` exactly as ``drift experiment run`` does, concurrency 4.

Every LLM call (actor; the gate's judge as the verdict's ``latency_ms`` ending when the verdict
arrives; the interventions' judge calls as the directives' ``latency_ms`` when a step took at least 90 % of a
call; the evaluation judge) is recorded as a time interval under its session's run id. Outside-LLM share =
1 − (time covered by at least one call in flight) / session wall time, summed over sessions: what the runner,
the service, the scoring and the storage add on top of the calls that cannot be made faster.
Run from the repository root: ``.venv/bin/python -m ops.bench.experiment``; merges ``exp_wall_per_session_s``,
``exp_llm_calls_per_session`` and ``exp_outside_llm_share`` into results.json.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from engine.actors.base import ActRequest, ActResult
from engine.actors.scripted import ScriptedActor, ScriptedListModel, ScriptedRules
from engine.experiments.budget import Budget
from engine.judges.base import JudgeRequest, JudgeResult
from engine.judges.scripted import ScriptedJudge
from engine.settings import Settings
from engine.simulation.plan import SessionPlan
from ops.bench.common import RESULTS_PATH, machine_info, merge_results
from ops.bench.simulate import running_service
from streams.cli.experiment_main import RunOptions, plan
from streams.client import GateClient
from streams.client.experiments import ExperimentRun, MeteredActor, MeteredModel, MeteredService, Progress
from streams.client.simulate import SessionResult, Simulation
from streams.store import Store
from streams.store.experiments import ExperimentStore
from streams.wire.payloads import Directives, Verdict

LATENCY_S = 0.2
SCALE = 0.05
TARGET_SHARE = 0.10
# every claim answered after 200 ms; drafts pass (inverted anti-patterns 0, the rest 9); the variety check says no
RULES = f"""default: 9
default_check: false
rules:
  - {{proposition: "*-generic-assistant*", value: 0, delay_s: {LATENCY_S}}}
  - {{proposition: "*-betrays-beliefs*", value: 0, delay_s: {LATENCY_S}}}
  - {{proposition: "*-breaks-the-fourth-wall*", value: 0, delay_s: {LATENCY_S}}}
  - {{proposition: "*", value: 9, delay_s: {LATENCY_S}}}
  - {{proposition: "*", value: false, delay_s: {LATENCY_S}}}
"""
Intervals = dict[str, list[tuple[float, float]]]


def _run_of(agent_or_target: str) -> str:
    """The session run id (``<experiment>.a1.<arm>.<key>``) inside an agent id or a target name."""
    words = [w for w in agent_or_target.split() if ".a1." in w] or [agent_or_target]
    return ".".join(words[0].split(".")[:4])


class Clocked:
    """Records the interval of every call under its session's run id."""

    def __init__(self, inner: Any, intervals: Intervals) -> None:
        self.inner, self.intervals = inner, intervals

    @property
    def name(self) -> str:
        return str(self.inner.name)

    async def _timed(self, run_id: str, call: Any) -> Any:
        started = time.perf_counter()
        result = await call
        self.intervals[run_id].append((started, time.perf_counter()))
        return result

    async def act(self, request: ActRequest) -> ActResult:
        return await self._timed(_run_of(request.agent_id), self.inner.act(request))  # type: ignore[no-any-return]

    async def evaluate(self, request: JudgeRequest) -> JudgeResult:
        run_id = _run_of(request.agent_id or request.target_name)
        return await self._timed(run_id, self.inner.evaluate(request))  # type: ignore[no-any-return]


class ClockedService(MeteredService):
    def __init__(self, service: Any, intervals: Intervals) -> None:
        super().__init__(service)
        self.intervals = intervals

    async def step(self, *, run_id: str, step: int, agent_ids: list[str], channel: str | None = None) -> Directives:
        directives = await super().step(run_id=run_id, step=step, agent_ids=agent_ids, channel=channel)
        if directives.latency_ms >= LATENCY_S * 900:  # the interventions asked the judge during this step
            now = time.perf_counter()
            self.intervals[run_id].append((now - directives.latency_ms / 1000.0, now))
        return directives

    async def check(self, *, agent_id: str, text: str, **fields: Any) -> Verdict:
        verdict = await super().check(agent_id=agent_id, text=text, **fields)  # metered: the gate's calls count
        if verdict.scores:
            now = time.perf_counter()
            self.intervals[_run_of(agent_id)].append((now - verdict.latency_ms / 1000.0, now))
        return verdict


class TimedSimulation(Simulation):
    """Keeps each session's simulation-phase wall time (before scoring and storage)."""

    phase_s: dict[str, float]

    async def run_session(self, plan: SessionPlan, arm: str, *, configure: bool = True) -> SessionResult:
        result = await super().run_session(plan, arm, configure=configure)
        self.phase_s[result.run_id] = result.wall_s
        return result


def covered(intervals: list[tuple[float, float]]) -> float:
    total, end = 0.0, float("-inf")
    for start, stop in sorted(intervals):
        if stop > end:
            total += stop - max(start, end)
            end = stop
    return total


async def measure(settings: Settings, root: Path) -> dict[str, Any]:
    planned = plan(RunOptions("brainstorming-average", scale=SCALE), settings)
    intervals: Intervals = defaultdict(list)
    judge = ScriptedJudge.from_file(root / "judge.yaml")
    actor = ScriptedActor(ScriptedRules(latency_ms=LATENCY_S * 1000))
    async with await Store.connect(settings.database()) as db, GateClient(settings=settings, timeout_s=60) as gate:
        await db.migrate()
        xstore = ExperimentStore(db)
        await xstore.create("bench-x", planned.scenario.name, None, {"bench": True})
        clocked_actor: Any = Clocked(actor, intervals)
        sim = TimedSimulation(planned.scenario, planned.personas, MeteredActor(clocked_actor),
                         MeteredModel(ScriptedListModel()), ClockedService(gate, intervals), "bench-x.a1")  # fmt: skip
        sim.phase_s = {}
        clocked_judge: Any = Clocked(judge, intervals)
        runner = ExperimentRun("bench-x", sim, clocked_judge, planned.sets, xstore, planned.estimates, Budget(),
                               concurrency=4)  # fmt: skip
        progress = Progress(total=len(planned.plans) * 2)
        started = time.perf_counter()
        status = await runner.run(planned.plans, progress)
        wall = time.perf_counter() - started
        rows = await db.pool.fetch("SELECT run_id, wall_s, llm_calls FROM experiment_sessions WHERE experiment_id = $1",
                                   "bench-x")  # fmt: skip
    sessions = {r["run_id"]: (float(r["wall_s"]), int(r["llm_calls"])) for r in rows}
    busy = sum(covered(intervals[run_id]) for run_id in sessions)
    session_wall = sum(w for w, _ in sessions.values())
    return {"status": status, "sessions": len(sessions), "wall": wall, "session_wall": session_wall,
            "busy": busy, "calls": sum(c for _, c in sessions.values()),
            "simulation_s": sum(sim.phase_s.values())}  # fmt: skip


def run_measured() -> dict[str, Any]:
    with running_service("bench-exp.", 10, RULES) as (settings, root):
        return asyncio.run(measure(settings, root))


def main() -> None:
    info = machine_info()
    print(f"machine: {info['cpu']}, {info['cores']} cores, Python {info['python']}, {info['platform']}")
    m = run_measured()
    if m["status"] != "completed":
        raise SystemExit(f"the experiment ended {m['status']}")
    n = m["sessions"]
    out = {"exp_wall_per_session_s": round(m["session_wall"] / n, 2),
           "exp_llm_calls_per_session": round(m["calls"] / n),
           "exp_outside_llm_share": round(1 - m["busy"] / m["session_wall"], 4)}  # fmt: skip
    print(f"brainstorming-average --scale {SCALE}: {n} sessions (both arms), concurrency 4, {m['wall']:.1f} s wall")
    for key, value in out.items():
        print(f"  {key:<28}{value:>10}")
    outside, scoring = m["session_wall"] - m["busy"], m["session_wall"] - m["simulation_s"]
    print(f"  per session: {m['simulation_s'] / n:.2f} s simulating, {scoring / n:.2f} s scoring; "
          f"{outside / n:.2f} s outside LLM calls")  # fmt: skip
    verdict = "ok" if out["exp_outside_llm_share"] <= TARGET_SHARE else "MISSED"
    print(f"  target share of session time outside LLM calls ≤ {TARGET_SHARE:.0%}: {verdict}")
    merge_results(RESULTS_PATH, out)
    print(f"written to {RESULTS_PATH}")


if __name__ == "__main__":
    main()
