"""``drift tail``, ``drift replay`` and ``drift stats``: pure helpers, then end-to-end on the embedded stack.

The end-to-end part shares two workers per module: a control gate (prefix A, no checks enabled) that sees
recorded traffic in three phases (early, window, late), and a treatment gate (prefix B, its own database)
that judges the replayed window with adherence checks switched on by ``drift replay --config``.
"""

from __future__ import annotations

import asyncio
import json
import os
import selectors
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import orjson
import pytest
from aiokafka import AIOKafkaProducer

from engine.errors import ConfigurationError
from streams.client import GateClient
from streams.payloads import Directives, Verdict, encode
from streams.replay import changes_for, load_agent_configs, parse_time, replay
from streams.store import Store
from streams.tail import matches, render, to_record
from tests.stack import DRIFT, Scenario, Stack, Worker, eventually, read_topic

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)

# -- time parsing and replay configuration files ------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2025-06-01T10:30:00Z", datetime(2025, 6, 1, 10, 30, tzinfo=UTC)),
        ("2025-06-01T12:30:00+02:00", datetime(2025, 6, 1, 10, 30, tzinfo=UTC)),
        ("2025-06-01T10:30:00", datetime(2025, 6, 1, 10, 30, tzinfo=UTC)),  # no offset: UTC
        ("-15m", NOW - timedelta(minutes=15)),
        ("-2h", NOW - timedelta(hours=2)),
        ("-30s", NOW - timedelta(seconds=30)),
        ("-1.5d", NOW - timedelta(hours=36)),
        ("-1w", NOW - timedelta(days=7)),
        ("now", NOW),
    ],
)
def test_parse_time_reads_rfc3339_and_relative_times(text: str, expected: datetime) -> None:
    assert parse_time(text, now=NOW) == expected


@pytest.mark.parametrize("text", ["yesterday", "15m", "-15x", "2025-13-01T00:00:00Z", ""])
def test_parse_time_rejects_anything_else_with_a_hint(text: str) -> None:
    with pytest.raises(ConfigurationError, match="relative time like -15m"):
        parse_time(text, now=NOW)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / f"config-{uuid.uuid4().hex[:6]}.yaml"
    path.write_text(text)
    return path


def test_agent_configs_merge_the_star_entry_under_each_agent(tmp_path: Path) -> None:
    configs = load_agent_configs(
        write(
            tmp_path,
            '"*": {gate_adherence_enabled: true, gate_adherence_threshold: 6}\njim: {gate_adherence_threshold: 3}\n',
        )
    )
    assert changes_for(configs, "jim") == {"gate_adherence_enabled": True, "gate_adherence_threshold": 3}
    assert changes_for(configs, "pam") == {"gate_adherence_enabled": True, "gate_adherence_threshold": 6}
    only_jim = load_agent_configs(write(tmp_path, "jim: {max_correction_attempts: 1}\n"))
    assert changes_for(only_jim, "pam") == {}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "jim: {gate_adherense_enabled: true}\n",
            "jim: unknown configuration key 'gate_adherense_enabled' (did you mean",
        ),
        ("jim: {gate_adherence_threshold: 12}\n", "jim: gate_adherence_threshold"),
        ("- jim\n", "expected a mapping of agent id"),
        ("jim: true\n", "jim: expected a mapping of configuration keys"),
        ("jim: [unclosed\n", "not valid YAML"),
        ("", "expected a mapping of agent id"),
    ],
)
def test_bad_agent_config_files_name_the_file_and_the_problem(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigurationError) as caught:
        load_agent_configs(path)
    assert str(caught.value).startswith(f"{path}: ") and message in str(caught.value)


def test_a_missing_config_file_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="cannot read"):
        load_agent_configs(tmp_path / "absent.yaml")


# -- tail records and lines ----------------------------------------------------------------------------------


def verdict(**changes: Any) -> Verdict:
    fields: dict[str, Any] = {
        "draft_id": "d1", "attempt": 2, "agent_id": "pam", "decision": "retry", "outcome": "corrected",
        "text": "Just a quick note about the art show.", "latency_ms": 41.6,
        "scores": {
            "adherence": {"score": 8.5, "threshold": 7, "passed": True},
            "fluency": {"score": 3.0, "threshold": 7, "passed": False},
            "suitability": {"score": 9, "threshold": 7, "passed": True, "timed_out": True},
        },
        "similarity": {"score": 0.72, "threshold": 0.6, "passed": False},
    }  # fmt: skip
    return Verdict.model_validate({**fields, **changes})


def test_a_verdict_line_shows_agent_decision_and_each_dimension() -> None:
    record = to_record("verdicts", 2, 17, 1_748_779_200_250, b"pam", encode(verdict()))
    line = render(record).plain
    assert line.startswith("12:00:00.250 pam retry/corrected #2")
    assert "adherence 8.5✓" in line and "fluency 3✗" in line and "suitability timeout" in line
    assert "similarity 0.72✗" in line and "42ms" in line and "'Just a quick note about the art show.'" in line
    styles = {str(span.style) for span in render(record).spans}
    assert {"green", "red", "yellow"} <= styles


def test_a_record_that_does_not_validate_keeps_its_json_and_says_why() -> None:
    value = orjson.dumps({"agent_id": "pam", "decision": "maybe"})
    record = to_record("verdicts", 0, 3, 0, b"pam", value)
    assert record.payload is None and record.error and "invalid Verdict" in record.error
    assert record.json_line() == value.decode() and record.agent_id == "pam"
    assert "p0@3 invalid record" in render(record).plain
    garbage = to_record("verdicts", 1, 4, 0, b"pam", b"\xff not json")
    assert garbage.json_line() is None and garbage.agent_id == "pam" and garbage.error


def test_agent_filter_matches_directives_addressed_to_the_agent() -> None:
    directives = Directives.model_validate(
        {"run_id": "r", "step": 4, "directives": [{"agent_id": "jim", "kind": "variety", "text": "Try a new idea."}]}
    )
    record = to_record("directives", 0, 0, 0, b"r", encode(directives))
    assert matches(record, "jim") and not matches(record, "pam") and matches(record, None)
    assert "jim variety 'Try a new idea.'" in render(record, "jim").plain
    assert "no directives" in render(record, "pam").plain
    assert matches(to_record("verdicts", 0, 0, 0, b"pam", encode(verdict())), "pam")
    assert not matches(to_record("verdicts", 0, 0, 0, b"pam", encode(verdict())), "jim")


def test_tail_refuses_an_unknown_kind() -> None:
    done = subprocess.run([DRIFT, "tail", "drafts"], capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 2 and "choose one of verdicts, corrections, messages, directives" in done.stderr


# -- end to end --------------------------------------------------------------------------------------------

RULES = """
default: 9
rules:
  - proposition: "adherence-[gb]*"
    value: 0
  - proposition: "adherence-[mv]*"
    message_contains: "monotone"
    value: 1
    reasoning: "reads like a memo, not like this person"
"""


@dataclass
class Traffic:
    control: Scenario
    treatment: Scenario
    treatment_db: str
    agents: tuple[str, str]
    since: datetime
    until: datetime
    early: list[str] = field(default_factory=list)
    window: dict[str, str] = field(default_factory=dict)  # draft id -> text
    late: list[str] = field(default_factory=list)


async def _treatment_database(stack: Stack) -> str:
    name = f"treat_{uuid.uuid4().hex[:8]}"
    conn = await asyncpg.connect(stack.database.url)
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    url = stack.database.url.replace("/postgres?", f"/{name}?")
    async with await Store.connect(url) as store:
        await store.migrate()
    return url


async def _record(traffic: Traffic) -> None:
    """Three phases of control traffic (early, window, late), with one invalid and one mis-keyed record."""
    x, y = traffic.agents
    async with GateClient(settings=traffic.control.settings, timeout_s=20) as gate:
        for i in range(2):
            traffic.early.append((await gate.check(agent_id=x, text=f"early note {i}")).draft_id)
        await asyncio.sleep(1.2)
        traffic.since = datetime.now(UTC)
        texts = [
            (x, "a monotone memo"), (x, "I am Beyoncé, always"), (x, "another monotone memo"),
            (y, "a monotone reply"), (y, "Bears. Beets. Battlestar Galactica."), (y, "one more monotone reply"),
        ]  # fmt: skip
        verdicts = await asyncio.gather(*(gate.check(agent_id=a, text=t) for a, t in texts))
        traffic.window = {v.draft_id: t for v, (_, t) in zip(verdicts, texts, strict=True)}
        producer = AIOKafkaProducer(bootstrap_servers=traffic.control.settings.broker)
        await producer.start()
        try:
            topic = traffic.control.settings.topic("drafts")
            await producer.send_and_wait(topic, b"not a draft", key=x.encode())
            await producer.send_and_wait(topic, orjson.dumps({"draft_id": "k", "agent_id": x, "text": "hi"}), key=b"z")
        finally:
            await producer.stop()
        await asyncio.sleep(1.2)
        traffic.until = datetime.now(UTC)
        traffic.late.append((await gate.check(agent_id=y, text="late note")).draft_id)


@pytest.fixture(scope="module")
def traffic(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Traffic]:
    control = Scenario(stack, f"a{uuid.uuid4().hex[:8]}.", tmp_path_factory.mktemp("control"))
    treatment = Scenario(stack, f"b{uuid.uuid4().hex[:8]}.", tmp_path_factory.mktemp("treatment"))
    treatment_db = asyncio.run(_treatment_database(stack))
    asyncio.run(control.create_topics())
    asyncio.run(treatment.create_topics())
    judge = control.rules(RULES)
    workers = [control.worker(judge=judge), treatment.worker(judge=judge, env={"DRIFT_DATABASE_URL": treatment_db})]
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(Worker.start, workers))
    tag = uuid.uuid4().hex[:4]
    item = Traffic(control, treatment, treatment_db, (f"oscar-{tag}", f"dwight-{tag}"), NOW, NOW)
    asyncio.run(_record(item))
    yield item
    control.close()
    treatment.close()


def drift(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([DRIFT, *args], capture_output=True, text=True, timeout=timeout, check=False, env=env)


def wait_for_stderr(process: subprocess.Popen[str], text: str, timeout_s: float = 20.0) -> str:
    assert process.stderr is not None
    selector = selectors.DefaultSelector()
    selector.register(process.stderr, selectors.EVENT_READ)
    seen = ""
    deadline = time.monotonic() + timeout_s
    while text not in seen and time.monotonic() < deadline and process.poll() is None:
        if selector.select(timeout=0.2):
            seen += os.read(process.stderr.fileno(), 4096).decode(errors="replace")
    assert text in seen, f"never saw {text!r}; stderr so far: {seen!r}"
    return seen


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
    config = write(
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
    assert counts["read"] == counts["replayed"] + counts["invalid"] + counts["skipped_out_of_window"]
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
    table = drift("stats", "--url", url)
    assert table.returncode == 0, table.stderr
    assert f"gate statistics — {url}" in table.stdout and "regeneration failure rate" in table.stdout
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
