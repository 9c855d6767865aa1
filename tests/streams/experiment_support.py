"""Helpers of the `drift experiment run` end-to-end tests: runs on the embedded stack with the scripted actor and
scripted judges that plant a known effect on every metric of the report (both files), a SIGKILLed run resumed to
the same scores (test_experiment_e2e.py), a Ctrl-C and a budget cap that leave partial experiments with a report
(test_experiment_partial_e2e.py). Two files, each with its own worker, so that pytest-xdist runs them side by
side: together they were the suite's longest file.

How each effect is planted (all scripted, named ``scripted:…`` in every output):

* judged metrics (adherence, self-consistency, fluency, divergence, the judge's ideas count): the evaluation
  judge's answers depend on the arm named in the session-scoped agent id or target (``PLANTED``);
* the extracted ideas / opinions counts: the scripted actor drifts into bland agreement (no new idea) after
  ``DRIFT_AFTER`` messages of its own; the gate's judge (a separate rules file, the worker's) scores a draft
  that drifts far below the treatment's adherence threshold, so in the treatment arm — and only there, the
  control arm has no gate — every drifting draft is retried and the rewrite is a fresh idea. The treatment
  therefore extracts more ideas (brainstorming) and more opinions (debate): what really differs between the
  arms (the gate's correction) produces the effect, nothing keyed on the arm.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from engine.actors.scripted import DRIFT_MARKER
from engine.experiments.budget import estimate_session, scale_plans
from engine.experiments.metrics import metric_sets
from engine.models import Dimension
from engine.personas import load_population
from engine.propositions import load_set
from engine.simulation.plan import plan_sessions
from engine.simulation.population import BUNDLED_TINY
from engine.simulation.scenario import load_scenario
from streams.store import Store
from tests.stack import REPO, SUITE_TIMING, Scenario, eventually

SCENARIO, DEBATE = "brainstorming-average", "debate-controversial"
DRIFT_AFTER = 3
#: planted judge values per (dimension, arm): (group 1, other groups); inverted claims get 9 - value
PLANTED = {
    Dimension.ADHERENCE: {"treatment": (8, 7), "control": (3, 2)},
    Dimension.CONSISTENCY: {"treatment": (3, 2), "control": (7, 6)},
    Dimension.FLUENCY: {"treatment": (8, 6), "control": (5, 4)},
    Dimension.CONVERGENCE: {"treatment": (3, 2), "control": (7, 8)},
    Dimension.IDEAS_QUANTITY: {"treatment": (6, 5), "control": (2, 3)},
}
#: the planted direction of every metric of each scenario's report (treatment above: +1, below: -1)
JUDGED = {"hard_persona_adherence": 1, "self_consistency": -1, "fluency": 1, "divergence": -1}
EXPECTED = {SCENARIO: {**JUDGED, "ideas_qty_judge": 1, "ideas_qty": 1}, DEBATE: {**JUDGED, "opinions_qty": 1}}
AGENT_METRICS = {"hard_persona_adherence", "self_consistency", "fluency"}


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


def gate_rules(propositions: Path) -> str:
    """The worker's judge: a draft that drifts (the scripted actor's bland agreement) fails persona adherence,
    any other draft passes; no intervention check fires."""
    rules: list[dict[str, Any]] = []
    for drifted, value in ((True, 1), (False, 9)):
        for prop in load_set(propositions, Dimension.ADHERENCE, None, action=True).propositions:  # the gate's set
            rule = {"proposition": prop.id, "value": 9 - value if prop.inverted else value}
            rules.append({**rule, "message_contains": DRIFT_MARKER} if drifted else rule)
    return json.dumps({"default": 9, "default_check": False, "rules": rules})


def drift(scenario: Scenario, *args: str) -> list[str]:
    service = ["--broker", scenario.stack.broker.bootstrap, "--prefix", scenario.prefix] if args[0] == "run" else []
    return [sys.executable, "-m", "streams.cli", "experiment", *args, *service]


def env(scenario: Scenario) -> dict[str, str]:
    environ = {**os.environ, **SUITE_TIMING, "DRIFT_DATABASE_URL": scenario.stack.database.url, "COLUMNS": "200"}
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


async def start(scenario: Scenario, tmp_path: Path) -> tuple[list[str], list[str]]:
    """Topics and one worker (its gate judged by :func:`gate_rules`); returns the run options of the planted
    judge with a quick actor (``common``) and with a slow one, one session at a time (``slow``)."""
    await scenario.create_topics()
    judge = scenario.rules(planted_rules(scenario.settings.propositions_dir))
    scenario.worker(judge=scenario.rules(gate_rules(scenario.settings.propositions_dir))).start()
    actor = tmp_path / "actor.yaml"
    actor.write_text(f"latency_ms: 15\ndrift_after: {DRIFT_AFTER}\n")
    common = ["--scale", "0.05", "--actor", f"scripted:{actor}", "--judge", judge]
    # the interrupted runs' actor says the same things, only slower, one session at a time: a session lasts seconds,
    # so the kill lands mid-way however busy the machine
    slow_actor = tmp_path / "slow-actor.yaml"
    slow_actor.write_text(f"latency_ms: 150\ndrift_after: {DRIFT_AFTER}\n")
    slow = ["--scale", "0.05", "--actor", f"scripted:{slow_actor}", "--judge", judge, "--concurrency", "1"]
    return common, slow


async def check_planted_directions(scenario: Scenario, name: str, common: list[str]) -> str:
    """An uninterrupted run: every metric of the report shows the planted direction."""
    whole, status = await asyncio.to_thread(run, scenario, "run", name, *common, "--concurrency", "4")
    assert status == "completed"
    command = drift(scenario, "report", whole, "--format", "json")
    done = subprocess.run(command, cwd=REPO, env=env(scenario), capture_output=True, text=True, check=True)
    report = json.loads(done.stdout)
    metrics = {m["metric"]: m for m in report["experiments"][0]["metrics"]}
    assert set(metrics) == set(EXPECTED[name])  # every metric of the report is planted
    for metric, direction in EXPECTED[name].items():
        row = metrics[metric]
        assert row["treatment"]["mean"] != row["control"]["mean"], row
        assert (row["treatment"]["mean"] > row["control"]["mean"]) == (direction > 0), row
        assert row["control"]["n"] == row["treatment"]["n"] == (10 if metric in AGENT_METRICS else 2)
        paper = row["paper"]  # the paper's direction beside ours: agreement is judged against the planted one
        paper_direction = None if paper is None else (paper["treatment"] > paper["control"]) - (
            paper["treatment"] < paper["control"])  # fmt: skip
        assert row["direction_agrees"] == (None if paper is None else paper_direction == direction), row
    assert sum(m["paper"] is not None for m in metrics.values()) >= 2  # the published values are beside ours
    text = subprocess.run(drift(scenario, "report", whole), cwd=REPO, env=env(scenario), capture_output=True,
                          text=True, check=True).stdout  # fmt: skip
    assert "scripted:" in text  # the scripted actor and judge are named in the report
    scores = await stored_scores(scenario, whole)
    assert len(scores) == 2 * 2 * (5 * 3 + len(EXPECTED[name]) - 3) and all(rows > 0 for *_, rows in scores[:3])
    return whole


async def check_kill_and_resume(scenario: Scenario, common: list[str], slow: list[str], whole: str) -> None:
    """SIGKILL a run (of the slow actor) mid-way, resume it: no session redone twice, the same scores as the whole
    run."""
    killed = await kill_after_first_session(scenario, slow)
    resumed, status = await asyncio.to_thread(run, scenario, "run", SCENARIO, *common, "--resume", killed)
    assert (resumed, status) == (killed, "completed")
    other_scale = [*common[2:], "--scale", "0.1", "--resume", killed]  # a resume must keep the experiment's plan
    done = subprocess.run(drift(scenario, "run", SCENARIO, *other_scale), cwd=REPO, env=env(scenario),
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 2 and "resume with the same --scale" in done.stderr, done.stderr[-2000:]
    async with await Store.connect(scenario.stack.database.url) as store:
        row = await store.pool.fetchrow("SELECT status, attempts FROM experiments WHERE id = $1", killed)
    assert tuple(row) == ("completed", 2)  # the refused resume changed nothing

    # every score equal, the extracted counts included (the scripted actor's wording does not depend on the run)
    assert await stored_scores(scenario, killed) == await stored_scores(scenario, whole)


async def check_budget_cap(scenario: Scenario, common: list[str]) -> None:
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


async def kill_after_first_session(scenario: Scenario, args: list[str], sig: signal.Signals = signal.SIGKILL) -> str:
    """Start a run, kill it once it has stored a session; returns its id. The run is told apart from every experiment
    stored before it starts: other test files on this pytest worker share the database (one of them stores a whole
    four-session experiment of its own, which an exclusion of this file's runs only mistook for this one)."""
    personas = load_population(BUNDLED_TINY, load_scenario(SCENARIO).population.fragments)
    total = 2 * len(scale_plans(plan_sessions(load_scenario(SCENARIO), list(personas)), 0.05))
    async with await Store.connect(scenario.stack.database.url) as store:  # connected before the run starts
        known = [r["id"] for r in await store.pool.fetch("SELECT id FROM experiments")]
        process = subprocess.Popen(drift(scenario, "run", SCENARIO, *args), cwd=REPO, env=env(scenario),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        found: dict[str, Any] = {}

        async def one_stored() -> bool:
            row = await store.pool.fetchrow(
                "SELECT e.id, count(s.session_key) AS n FROM experiments e LEFT JOIN experiment_sessions s "
                "ON s.experiment_id = e.id WHERE NOT e.id = ANY($1) GROUP BY e.id", known
            )  # fmt: skip
            found.update(dict(row) if row else {})
            return bool(row and row["n"] >= 1)

        try:
            assert await eventually(one_stored, timeout_s=60, interval_s=0.02)
        finally:
            process.send_signal(sig)
            code = await asyncio.to_thread(process.wait, 30)
        assert code == (0 if sig is signal.SIGINT else -signal.SIGKILL)
        await one_stored()
    assert 1 <= found["n"] < total, found  # killed mid-way
    return str(found["id"])
