"""Everyday verbs through the real entry point: --version, init, agents list, check."""

from __future__ import annotations

import asyncio
import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from streams.store import Store
from streams.wire.payloads import Message
from tests.stack import DRIFT, Scenario, Stack


def drift(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([DRIFT, *args], capture_output=True, text=True, timeout=timeout, check=False, env=env)


def test_version_prints_the_installed_version() -> None:
    done = drift("--version")
    assert done.returncode == 0
    assert done.stdout.startswith("persona-drift ")
    assert done.stdout.split()[1][0].isdigit()


def test_init_scaffolds_a_tree_that_validates(tmp_path: Path) -> None:
    cast = tmp_path / "cast"
    done = drift("init", str(cast))
    assert done.returncode == 0, done.stderr
    assert (cast / "personas" / "alex.yaml").is_file()
    assert (cast / "adherence" / "_default.yaml").is_file()
    assert (cast / "baselines").is_dir()
    validated = drift("validate", str(cast))
    assert validated.returncode == 0, validated.stderr
    assert "persona" in validated.stdout and "propositions" in validated.stdout
    shown = drift("propositions", "show", "--dir", str(cast), "--agent", "alex", "-d", "adherence", "--json")
    assert shown.returncode == 0, shown.stderr
    assert "alex-next-step" in shown.stdout


def test_init_refuses_a_folder_that_is_not_empty(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    done = drift("init", str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "not empty" in done.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]


def test_agents_list_without_a_database_shows_the_personas() -> None:
    done = drift("agents", "list", "--no-database", "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert {"michael", "dwight", "jim"} <= {r["agent_id"] for r in rows}
    assert all(r["persona"] and r["actions"] == 0 for r in rows)


@pytest.fixture(scope="module")
def gate(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scenario]:
    scenario = Scenario(stack, f"e{uuid.uuid4().hex[:8]}.", tmp_path_factory.mktemp("everyday"))
    asyncio.run(scenario.create_topics())
    scenario.worker(judge="offline").start()
    yield scenario
    scenario.close()


@pytest.mark.e2e
def test_check_prints_the_verdict_of_one_draft(gate: Scenario) -> None:
    agent = gate.agent("phyllis")
    args = ("check", "--agent", agent, "--text", "Knitting club is at noon.", "--timeout", "20")
    common = ("--broker", gate.stack.broker.bootstrap, "--prefix", gate.prefix)
    done = drift(*args, *common, "--json")
    assert done.returncode == 0, done.stderr
    verdict = json.loads(done.stdout)
    assert (verdict["agent_id"], verdict["decision"], verdict["text"]) == (agent, "commit", "Knitting club is at noon.")
    plain = drift(*args, *common)
    assert plain.returncode == 0 and f"{agent}: commit (passed;" in plain.stdout
    # issue 29: an agent without a persona is flagged; a fresh agent's checks are all off, and the note says so
    assert f"no persona for agent {agent!r}" in plain.stderr
    assert f"every check is off for {agent}" in plain.stderr


@pytest.mark.e2e
async def test_agents_list_reads_the_database(stack: Stack) -> None:
    agent = f"meredith-{uuid.uuid4().hex[:6]}"
    async with await Store.connect(stack.database.url) as store:
        await store.write_messages([Message(message_id=uuid.uuid4().hex, agent_id=agent, text="Cheers.")])
    done = drift("agents", "list", "--json", "--database", stack.database.url)
    assert done.returncode == 0, done.stderr
    (row,) = [r for r in json.loads(done.stdout) if r["agent_id"] == agent]
    assert (row["persona"], row["actions"], row["configured"]) == (False, 1, False)  # a default row: not configured
    async with await Store.connect(stack.database.url) as store:
        await store.set_config(agent, {"gate_adherence_enabled": True})
    listed = json.loads(drift("agents", "list", "--json", "--database", stack.database.url).stdout)
    assert [r["configured"] for r in listed if r["agent_id"] == agent] == [True]


@pytest.mark.e2e
async def test_every_command_reading_a_database_without_the_schema_says_how_to_make_it(stack: Stack) -> None:
    url = await stack.own_database("bare", migrate=False)
    expected = "has no persona-drift tables: run 'drift db migrate' (or 'drift up')"
    commands = [("experiment", "report", "x-foo"), ("agents", "list"), ("config", "show", "michael"),
                ("stats", "--from-database")]  # fmt: skip
    for args in commands:
        done = drift(*args, "--database", url)
        assert (done.returncode, done.stderr.strip().count("\n")) == (2, 0), (args, done.stderr)
        assert done.stderr.startswith("drift: the database at postgresql://") and expected in done.stderr, args
