"""``drift tail``, ``drift replay`` and ``drift stats`` end-to-end on the embedded stack.

All tests share two workers for the module: a control gate (prefix A, no checks enabled) that sees recorded
traffic in three phases (early, window, late), and a treatment gate (prefix B, its own database) that judges
the replayed window with adherence checks switched on by ``drift replay --config``. The tests stay in one
module so that the workers start once; some counts allow for drafts that earlier tests here added.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pytest

from streams.client import GateClient
from streams.client.replay import replay
from streams.store import Store
from tests.stack import DRIFT, Scenario, Stack, Worker, eventually, read_topic
from tests.streams.ops_cli_support import (
    NOW,
    RULES,
    Traffic,
    drift,
    record_traffic,
    wait_for_stderr,
    write_config,
)
from tests.terminal import foreground_signals


@pytest.fixture(scope="module")
def traffic(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Traffic]:
    control = Scenario(stack, f"a{uuid.uuid4().hex[:8]}.", tmp_path_factory.mktemp("control"))
    treatment = Scenario(stack, f"b{uuid.uuid4().hex[:8]}.", tmp_path_factory.mktemp("treatment"))
    treatment_db = asyncio.run(stack.own_database("treat"))
    asyncio.run(control.create_topics())
    asyncio.run(treatment.create_topics())
    judge = control.rules(RULES)
    workers = [control.worker(judge=judge), treatment.worker(judge=judge, env={"DRIFT_DATABASE_URL": treatment_db})]
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(Worker.start, workers))
    tag = uuid.uuid4().hex[:4]
    item = Traffic(control, treatment, treatment_db, (f"oscar-{tag}", f"dwight-{tag}"), NOW, NOW)
    asyncio.run(record_traffic(item))
    yield item
    control.close()
    treatment.close()


@pytest.mark.e2e
def test_tail_json_from_the_beginning_prints_parseable_verdicts(traffic: Traffic) -> None:
    sent = {*traffic.early, *traffic.window, *traffic.late}
    done = drift("tail", "verdicts", "--json", "--from-beginning", "--limit", str(len(sent)),
                 "--broker", traffic.control.settings.broker, "--prefix", traffic.control.prefix)  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    records = [json.loads(line) for line in lines]
    assert len(records) == len(sent) and {r["draft_id"] for r in records} == sent
    assert all(r["decision"] == "commit" and r["outcome"] == "passed" for r in records)
    assert "tailing" in done.stderr and "tailing" not in done.stdout


@pytest.mark.e2e
def test_tail_lines_for_one_agent(traffic: Traffic) -> None:
    x = traffic.agents[0]
    done = drift("tail", "corrections", "--from-beginning", "--limit", "3", "--agent", x,
                 "--broker", traffic.control.settings.broker, "--prefix", traffic.control.prefix)  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 3
    assert all(f" {x} commit/passed #1 draft " in line and "\x1b[" not in line for line in lines)


@pytest.mark.e2e
async def test_tail_follows_new_records_and_stops_after_the_limit(traffic: Traffic) -> None:
    settings = traffic.control.settings
    live = f"{traffic.agents[1]}-live"  # an agent of its own: earlier traffic may still be in flight
    process = subprocess.Popen(
        [DRIFT, "tail", "verdicts", "--json", "--limit", "1", "--agent", live,
         "--broker", settings.broker, "--prefix", traffic.control.prefix],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_for_stderr(process, "from now")
        async with GateClient(settings=settings, timeout_s=20) as gate:
            sent = await gate.check(agent_id=live, text="a live one")
        out, _ = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 0
    assert [json.loads(line)["draft_id"] for line in out.splitlines()] == [sent.draft_id]


@pytest.mark.e2e
def test_tail_exits_cleanly_on_ctrl_c(traffic: Traffic) -> None:
    process = subprocess.Popen(
        [DRIFT, "tail", "messages", "--broker", traffic.control.settings.broker, "--prefix", traffic.control.prefix],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=foreground_signals,  # noqa: PLW1509  # a test run started in the background ignores SIGINT
    )  # fmt: skip
    try:
        wait_for_stderr(process, "Ctrl-C to stop")
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=20)
    finally:
        process.kill()
    assert process.returncode == 0 and "Traceback" not in err


@dataclass
class Treated:
    counts: dict[str, Any]
    verdicts: list[dict[str, Any]]


@pytest.fixture(scope="module")
def treated(traffic: Traffic, tmp_path_factory: pytest.TempPathFactory) -> Treated:
    """`drift replay` of the window into the treatment gate, with adherence on for every agent."""
    y = traffic.agents[1]
    config = write_config(
        tmp_path_factory.mktemp("replay"),
        f'"*": {{gate_adherence_enabled: true}}\n{y}: {{gate_adherence_threshold: 0}}\n',
    )
    env = {**os.environ, "DRIFT_DATABASE_URL": traffic.treatment_db}
    done = drift("replay", "--from-topic", traffic.control.settings.topic("drafts"),
                 "--since", traffic.since.isoformat(), "--until", traffic.until.isoformat(),
                 "--to-prefix", traffic.treatment.prefix, "--config", str(config), "--json",
                 "--broker", traffic.control.settings.broker, env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    settings = traffic.treatment.settings
    verdicts = asyncio.run(read_topic(settings, settings.topic("verdicts"), len(traffic.window)))
    return Treated(json.loads(done.stdout), verdicts)


@pytest.mark.e2e
async def test_replay_lets_a_treatment_gate_judge_the_same_traffic(traffic: Traffic, treated: Treated) -> None:
    x, y = traffic.agents
    counts = treated.counts
    total = len(traffic.early) + len(traffic.window) + 2 + len(traffic.late)
    assert counts["read"] >= total  # the live-tail test may have added one more draft after the window
    assert (counts["replayed"], counts["invalid"]) == (len(traffic.window), 2)
    assert counts["read"] == (
        counts["replayed"] + counts["invalid"] + counts["skipped_out_of_window"] + counts["skipped_retries"]
    )
    assert sorted(counts["configured_agents"]) == sorted([x, y])

    assert {v["draft_id"] for v in treated.verdicts} == set(traffic.window)
    for v in treated.verdicts:
        text = traffic.window[v["draft_id"]]
        assert "adherence" in v["scores"]  # the control gate judged nothing: checks were off there
        if v["agent_id"] == x and "monotone" in text:
            assert (v["decision"], v["outcome"]) == ("retry", "corrected")
        else:  # y's threshold 0 lets everything through
            assert (v["decision"], v["outcome"]) == ("commit", "passed"), (v["agent_id"], text)

    async with await Store.connect(traffic.treatment_db) as store:
        treated_config = await store.get_config(y)
    async with await Store.connect(traffic.control.settings.database()) as store:
        control_config = await store.get_config(y)
    assert treated_config is not None and treated_config.gate_adherence_threshold == 0
    assert control_config is None or not control_config.gate_adherence_enabled


@pytest.mark.e2e
async def test_replay_counts_the_window_and_keeps_keys_and_values(traffic: Traffic) -> None:
    fresh = f"c{uuid.uuid4().hex[:8]}."
    progress: list[tuple[int, int]] = []
    counts = await replay(
        traffic.control.settings, from_topic=traffic.control.settings.topic("drafts"), to_prefix=fresh,
        since=traffic.since, until=traffic.until, progress=lambda done, total: progress.append((done, total)),
    )  # fmt: skip
    assert (counts.replayed, counts.invalid) == (len(traffic.window), 2)
    assert counts.skipped_out_of_window == counts.read - len(traffic.window) - 2 >= 3
    assert progress[-1] == (counts.read, counts.read) and len(progress) == counts.read
    target = traffic.control.settings.with_(topic_prefix=fresh)
    copied = await read_topic(target, target.topic("drafts"), 6)
    assert {d["draft_id"] for d in copied} == set(traffic.window)
    assert all(traffic.window[d["draft_id"]] == d["text"] for d in copied)

    open_ended = await replay(
        traffic.control.settings, from_topic=traffic.control.settings.topic("drafts"),
        to_prefix=f"c{uuid.uuid4().hex[:8]}.", since=traffic.until,
    )  # fmt: skip
    assert open_ended.replayed >= len(traffic.late) and open_ended.invalid == 0


@pytest.mark.e2e
def test_replay_refuses_its_own_topic_and_a_reversed_window(traffic: Traffic) -> None:
    base = [
        "replay",
        "--from-topic",
        traffic.control.settings.topic("drafts"),
        "--broker",
        traffic.control.settings.broker,
    ]
    same = drift(*base, "--since", "-1h", "--to-prefix", traffic.control.prefix)
    assert same.returncode == 2 and "into itself" in same.stderr
    reversed_window = drift(*base, "--since", "-1h", "--until", "-2h", "--to-prefix", "elsewhere.")
    assert reversed_window.returncode == 2 and "--until must be later than --since" in reversed_window.stderr


@pytest.mark.e2e
def test_stats_from_the_worker_as_json_and_as_a_table(traffic: Traffic) -> None:
    url = f"http://127.0.0.1:{traffic.control.workers[0].env['DRIFT_WEB_PORT']}"
    done = drift("stats", "--json", "--url", url)
    assert done.returncode == 0, done.stderr
    snapshot = json.loads(done.stdout)
    judged = len(traffic.early) + len(traffic.window) + len(traffic.late)
    assert snapshot["attempts"] >= judged and snapshot["outcomes"] == {"passed": snapshot["attempts"]}
    assert snapshot["dead_letters"] == 2 and snapshot["judge_calls"] == 0
    state = snapshot["state"]  # what the worker holds (issue 22): its agents are active, nothing is pending
    assert state["agents_in_memory"] >= len(traffic.agents) and state["pending_attempts"] == 0
    assert state["table_restore_seconds"] > 0
    table = drift("stats", "--url", url)
    assert table.returncode == 0, table.stderr
    assert f"gate statistics — {url}" in table.stdout and "regeneration failure rate" in table.stdout
    assert "agents in memory" in table.stdout and "sinks' lag (records)" in table.stdout
    assert "no dimension was judged" in table.stdout
    down = drift("stats", "--url", "http://127.0.0.1:9")
    assert down.returncode == 2 and "cannot read http://127.0.0.1:9/stats" in down.stderr


@pytest.mark.e2e
async def test_stats_from_the_database_match_the_treatment_verdicts(traffic: Traffic, treated: Treated) -> None:
    x = traffic.agents[0]
    verdicts = [v for v in treated.verdicts if v["agent_id"] == x]
    assert len(verdicts) == 3

    async def logged() -> bool:
        async with await Store.connect(traffic.treatment_db) as store:
            n = await store.pool.fetchval("SELECT count(*) FROM correction_logs WHERE agent_id = $1", x)
        return bool(n == len(verdicts))

    assert await eventually(logged)
    done = drift("stats", "--from-database", "--database", traffic.treatment_db, "--agent", x, "--json")
    assert done.returncode == 0, done.stderr
    snapshot = json.loads(done.stdout)
    scores = [v["scores"]["adherence"]["score"] for v in verdicts]
    assert snapshot["attempts"] == snapshot["drafts"] == len(verdicts)
    assert snapshot["outcomes"] == {
        o: sum(v["outcome"] == o for v in verdicts) for o in {v["outcome"] for v in verdicts}
    }
    assert snapshot["mean_scores"]["adherence"] == pytest.approx(sum(scores) / len(scores))
    assert snapshot["dimension_failures"]["adherence"] == sum(not v["scores"]["adherence"]["passed"] for v in verdicts)
    assert snapshot["original_success_rate"] == pytest.approx(
        sum(v["decision"] == "commit" for v in verdicts) / len(verdicts)
    )
    table = drift("stats", "--from-database", "--database", traffic.treatment_db)
    assert table.returncode == 0 and "database (correction_logs)" in table.stdout and "adherence" in table.stdout
