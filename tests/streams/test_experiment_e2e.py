"""End-to-end: `drift experiment run` on the embedded stack with the scripted actor and a scripted judge that
plants a known effect per arm; a SIGKILLed run resumed to the same scores; a budget cap that leaves a partial
experiment with a report."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from engine.experiments.budget import estimate_session, scale_plans
from engine.experiments.metrics import metric_sets
from engine.models import Dimension
from engine.personas import load_population
from engine.propositions import load_set
from engine.simulation.plan import plan_sessions
from engine.simulation.population import BUNDLED_TINY
from engine.simulation.scenario import load_scenario
from streams.store import Store
from tests.stack import REPO, Scenario, eventually

pytestmark = pytest.mark.e2e

SCENARIO = "brainstorming-average"
#: planted judge values per (dimension, arm): (group 1, other groups); inverted claims get 9 - value
PLANTED = {
    Dimension.ADHERENCE: {"treatment": (8, 7), "control": (3, 2)},
    Dimension.CONSISTENCY: {"treatment": (3, 2), "control": (7, 6)},
    Dimension.FLUENCY: {"treatment": (8, 6), "control": (5, 4)},
    Dimension.CONVERGENCE: {"treatment": (3, 2), "control": (7, 8)},
    Dimension.IDEAS_QUANTITY: {"treatment": (6, 5), "control": (2, 3)},
}
#: the planted direction of every judged metric (treatment above: +1, below: -1)
EXPECTED = {"hard_persona_adherence": 1, "self_consistency": -1, "fluency": 1, "divergence": -1,
            "ideas_qty_judge": 1}  # fmt: skip


def planted_rules(propositions: Path) -> str:
    rules: list[dict[str, Any]] = []
    for dimension, arms in PLANTED.items():
        matcher = "target" if dimension in {Dimension.CONVERGENCE, Dimension.IDEAS_QUANTITY} else "agent"
        for prop in load_set(propositions, dimension, None).propositions:
            for arm, (first, other) in arms.items():
                for pattern, planted in ((f"*.{arm}.g1-*", first), (f"*.{arm}.*", other)):
                    value = 9 - planted if prop.inverted else planted
                    rules.append({"proposition": prop.id, matcher: pattern, "value": value})
    return json.dumps({"default": 9, "default_check": False, "default_count": 1, "rules": rules})


def drift(scenario: Scenario, *args: str) -> list[str]:
    service = ["--broker", scenario.stack.broker.bootstrap, "--prefix", scenario.prefix] if args[0] == "run" else []
    return [sys.executable, "-m", "streams.cli", "experiment", *args, *service]


def env(scenario: Scenario) -> dict[str, str]:
    environ = {**os.environ, "DRIFT_DATABASE_URL": scenario.stack.database.url, "COLUMNS": "200"}
    environ.pop("ANTHROPIC_API_KEY", None)
    return environ


def run(scenario: Scenario, *args: str) -> tuple[str, str]:
    done = subprocess.run(drift(scenario, *args), cwd=REPO, env=env(scenario), capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    experiment_id, status = done.stdout.strip().splitlines()[-1].split("\t")
    return experiment_id, status


async def stored_scores(scenario: Scenario, experiment_id: str) -> list[tuple[Any, ...]]:
    async with await Store.connect(scenario.stack.database.url) as store:
        rows = await store.pool.fetch(
            "SELECT s.arm, s.session_key, s.metric, s.cluster, s.value, count(e.id) AS rows FROM experiment_scores s "
            "LEFT JOIN evaluation_scores e ON e.evaluation_run_id = s.evaluation_run_id WHERE s.experiment_id = $1 "
            "GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4",
            experiment_id,
        )
    return [tuple(r) for r in rows]


async def test_planted_effects_resume_and_budget(scenario: Scenario, tmp_path: Path) -> None:
    await scenario.create_topics()
    judge = scenario.rules(planted_rules(scenario.settings.propositions_dir))
    scenario.worker(judge=judge).start()
    actor = tmp_path / "actor.yaml"
    actor.write_text("latency_ms: 15\n")
    common = ["--scale", "0.05", "--actor", f"scripted:{actor}", "--judge", judge]
    whole = await _check_planted_directions(scenario, common)
    killed = await _check_kill_and_resume(scenario, common, whole)
    # Ctrl-C: no new session starts, the running one finishes and is stored, the experiment is partial
    interrupted = await _kill_after_first_session(scenario, [*common, "--concurrency", "1"], {whole, killed},
                                                  signal.SIGINT)  # fmt: skip
    async with await Store.connect(scenario.stack.database.url) as store:
        state = await store.pool.fetchval("SELECT status FROM experiments WHERE id = $1", interrupted)
    assert state == "partial"
    await _check_budget_cap(scenario, common)


async def _check_planted_directions(scenario: Scenario, common: list[str]) -> str:
    """An uninterrupted run: every judged metric shows the planted direction."""
    whole, status = await asyncio.to_thread(run, scenario, "run", SCENARIO, *common, "--concurrency", "4")
    assert status == "completed"
    command = drift(scenario, "report", whole, "--format", "json")
    done = subprocess.run(command, cwd=REPO, env=env(scenario), capture_output=True, text=True, check=True)
    report = json.loads(done.stdout)
    metrics = {m["metric"]: m for m in report["experiments"][0]["metrics"]}
    for metric, direction in EXPECTED.items():
        row = metrics[metric]
        assert (row["treatment"]["mean"] > row["control"]["mean"]) == (direction > 0), row
        assert row["control"]["n"] == (10 if metric in {"hard_persona_adherence", "self_consistency", "fluency"} else 2)
    assert metrics["hard_persona_adherence"]["direction_agrees"] is False  # the paper found the opposite
    assert metrics["ideas_qty"]["control"]["n"] == 2  # the rapporteur's extracted lists were counted
    scores = await stored_scores(scenario, whole)
    assert len(scores) == 2 * 2 * (5 * 3 + 3) and all(rows > 0 for *_, rows in scores[:3])
    return whole


async def _check_kill_and_resume(scenario: Scenario, common: list[str], whole: str) -> str:
    """SIGKILL a run mid-way, resume it: no session redone twice, the same scores as the whole run."""
    killed = await _kill_after_first_session(scenario, [*common, "--concurrency", "1"], {whole})
    resumed, status = await asyncio.to_thread(run, scenario, "run", SCENARIO, *common, "--resume", killed)
    assert (resumed, status) == (killed, "completed")
    other_scale = [*common[2:], "--scale", "0.1", "--resume", killed]  # a resume must keep the experiment's plan
    done = subprocess.run(drift(scenario, "run", SCENARIO, *other_scale), cwd=REPO, env=env(scenario),
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 2 and "resume with the same --scale" in done.stderr, done.stderr[-2000:]
    async with await Store.connect(scenario.stack.database.url) as store:
        row = await store.pool.fetchrow("SELECT status, attempts FROM experiments WHERE id = $1", killed)
    assert tuple(row) == ("completed", 2)  # the refused resume changed nothing

    # the scripted actor words its ideas from the agent id (which names the experiment), so only the extracted
    # counts differ between two experiments; every judged score must be equal
    def judged(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        return [r[:5] for r in rows if r[2] != "ideas_qty"]

    expected, resumed_scores = await stored_scores(scenario, whole), await stored_scores(scenario, killed)
    assert len(resumed_scores) == len(expected) and judged(resumed_scores) == judged(expected)
    return killed


async def _check_budget_cap(scenario: Scenario, common: list[str]) -> None:
    """A token cap that admits one session per arm: a partial experiment, still reported."""
    chosen = load_scenario(SCENARIO)
    sets = metric_sets(chosen, scenario.settings.propositions_dir)
    cap = sum(estimate_session(chosen, arm, sets).tokens for arm in ("treatment", "control"))
    capped, status = await asyncio.to_thread(run, scenario, "run", SCENARIO, *common, "--max-tokens", str(cap))
    assert status == "partial"
    sessions = {s[:2] for s in await stored_scores(scenario, capped)}
    assert len(sessions) == 2 and {arm for arm, _ in sessions} == {"treatment", "control"}
    text = subprocess.run(drift(scenario, "report", capped), cwd=REPO, env=env(scenario), capture_output=True,
                          text=True, check=True).stdout  # fmt: skip
    assert "partial" in text and "hard persona adherence" in text
    assert "spent: 2 sessions (0 failed)" in text and "LLM calls, $0.0000" in text  # scripted: priced free


async def _kill_after_first_session(
    scenario: Scenario, args: list[str], known: set[str], sig: signal.Signals = signal.SIGKILL
) -> str:
    personas = load_population(BUNDLED_TINY, load_scenario(SCENARIO).population.fragments)
    total = 2 * len(scale_plans(plan_sessions(load_scenario(SCENARIO), list(personas)), 0.05))
    process = subprocess.Popen(drift(scenario, "run", SCENARIO, *args), cwd=REPO, env=env(scenario),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    found: dict[str, Any] = {}

    async def one_stored() -> bool:
        async with await Store.connect(scenario.stack.database.url) as store:
            row = await store.pool.fetchrow(
                "SELECT e.id, count(s.session_key) AS n FROM experiments e LEFT JOIN experiment_sessions s "
                "ON s.experiment_id = e.id WHERE NOT e.id = ANY($1) GROUP BY e.id", list(known)
            )  # fmt: skip
        found.update(dict(row) if row else {})
        return bool(row and row["n"] >= 1)

    try:
        assert await eventually(one_stored, timeout_s=60, interval_s=0.05)
    finally:
        process.send_signal(sig)
        code = process.wait(timeout=30)
    assert code == (0 if sig is signal.SIGINT else -signal.SIGKILL)
    await one_stored()
    assert 1 <= found["n"] < total, found  # killed mid-way
    return str(found["id"])
