"""A first user's commands through the real entry point, no stack needed (issue 18).

Bad input: exit 2, one line starting ``drift:``, no traceback, and a bound on the time it takes to fail.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from engine.models import AgentConfig
from streams.embedded import free_port
from tests.stack import DRIFT, REPO

#: A command that fails on bad input must say so well within this (it used to wait 15 s and more).
FAIL_FAST_S = 10.0
SAMPLE = REPO / "ops" / "examples" / "office_conversation.jsonl"


def drift(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120, cwd: Path | None = None
) -> tuple[subprocess.CompletedProcess[str], float]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("DRIFT_") and k != "ANTHROPIC_API_KEY"}
    started = time.monotonic()
    done = subprocess.run(
        [DRIFT, *args], env={**base, **(env or {})}, capture_output=True, text=True, timeout=timeout, check=False,
        cwd=cwd,
    )  # fmt: skip
    return done, time.monotonic() - started


def assert_one_line_error(done: subprocess.CompletedProcess[str], elapsed: float, *fragments: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("drift: "), done.stderr[-2000:]
    assert "Traceback" not in done.stderr + done.stdout
    assert elapsed < FAIL_FAST_S, elapsed
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


# -- point 15: --help ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command", [("worker",), ("up",), ("eval", "run"), ("stats",), ("config", "show"), ("tail",), ("sinks",)]
)
def test_help_shows_flags_without_a_bool_type(command: tuple[str, ...]) -> None:
    done, _ = drift(*command, "--help", env={"COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    assert "<bool>" not in done.stdout
    assert "--help" in done.stdout


def test_help_keeps_the_type_of_options_that_take_a_value() -> None:
    done, _ = drift("worker", "--help", env={"COLUMNS": "200"})
    assert "<int range>" in done.stdout and "<str>" in done.stdout  # --partitions, --broker


def test_config_set_help_lists_every_key() -> None:
    done, _ = drift("config", "set", "--help", env={"COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    flat = " ".join(done.stdout.replace("│", " ").split())
    missing = [key for key in AgentConfig.model_fields if key not in flat]
    assert missing == []


# -- points 6, 7: one line, exit 2, quickly ------------------------------------------------------------------


@pytest.mark.timed
@pytest.mark.parametrize("command", ["worker", "sinks"])
def test_an_unreachable_database_is_one_line_quickly(command: str) -> None:
    database = f"postgresql://drift:secret@127.0.0.1:{free_port()}/drift"
    done, elapsed = drift(command, "--database", database, "--broker", f"127.0.0.1:{free_port()}",
                          env={"DRIFT_CONNECT_TIMEOUT_S": "2"})  # fmt: skip
    assert_one_line_error(done, elapsed, "cannot connect to the database")
    assert "secret" not in done.stderr


@pytest.mark.timed
def test_db_migrate_with_a_database_that_is_not_a_url() -> None:
    done, elapsed = drift("db", "migrate", "--database", "notaurl")
    assert_one_line_error(done, elapsed, "notaurl")


@pytest.mark.timed
def test_up_with_an_unusable_data_dir(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    done, elapsed = drift("up", "--data-dir", str(blocker / "state"), "--kafka-port", str(free_port()))
    assert_one_line_error(done, elapsed, "--data-dir", "cannot be used")


@pytest.mark.timed
def test_demo_with_an_unknown_judge_fails_before_starting_anything() -> None:
    done, elapsed = drift("demo", "--judge", "gpt4")
    assert_one_line_error(done, elapsed, "unknown judge 'gpt4'")
    assert "ready" not in done.stdout


def test_worker_on_an_empty_propositions_folder_warns(tmp_path: Path) -> None:
    empty = tmp_path / "props"
    empty.mkdir()
    done, _ = drift("worker", "--propositions", str(empty), "--database", f"postgresql://x@127.0.0.1:{free_port()}/x",
                    env={"DRIFT_CONNECT_TIMEOUT_S": "1"})  # fmt: skip
    assert done.returncode == 2
    assert "warning" in done.stderr and "no proposition or persona files" in done.stderr


# -- point 5: unknown agents -----------------------------------------------------------------------------------


def test_propositions_show_of_an_unknown_agent_says_so() -> None:
    done, _ = drift("propositions", "show", "--agent", "nosuch", "--dimension", "adherence", "--json")
    assert done.returncode == 0, done.stderr
    assert "unknown agent 'nosuch'" in done.stderr and "drift agents list" in done.stderr
    assert done.stderr.count("\n") == 1
    json.loads(done.stdout)  # the JSON stays clean
    known, _ = drift("propositions", "show", "--agent", "michael", "--dimension", "adherence")
    assert known.returncode == 0 and "unknown agent" not in known.stderr


# -- points 2, 16 and the acceptance: the quick start --------------------------------------------------------


def quick_start_commands() -> list[list[str]]:
    """The `drift …` lines of the README's quick start, verbatim."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = section.split("```sh", 1)[1].split("```", 1)[0]
    commands = [line.split("#", 1)[0].split() for line in block.splitlines()]
    return [c for c in commands if c and c[0] == "drift"]


def test_the_quick_start_eval_compares_every_dimension_and_prices_its_judge() -> None:
    evals = [c for c in quick_start_commands() if c[1:3] == ["eval", "run"]]
    assert evals, "the quick start runs drift eval run"
    done, _ = drift(*evals[0][1:], cwd=REPO)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "not comparable" not in done.stdout + done.stderr and "other judge" not in done.stdout
    assert "Traceback" not in done.stderr
    assert "judge usage:" in done.stdout and "cost $0.0000" in done.stdout  # a scripted judge costs nothing


def test_eval_run_json_keeps_exact_scores_and_reports_usage() -> None:
    rules = f"scripted:{REPO / 'ops/examples/judge_rules.yaml'}"
    args = ("--judge", rules, "--messages", str(SAMPLE), "--agents", "michael", "--format", "json")
    done, _ = drift("eval", "run", *args)
    assert done.returncode == 0, done.stderr[-2000:]
    document = json.loads(done.stdout)
    usage = document["judge_usage"]
    assert usage["calls"] > 0 and usage["cost_usd"] == 0.0 and usage["judge"].startswith("scripted:")
    scores = [d["score"] for d in document["agents"]["michael"].values() if d["score"] is not None]
    assert any(round(s, 4) != s for s in scores)  # not cut to 4 decimals: the exact value


def test_eval_run_with_the_offline_judge_says_what_it_cannot_judge() -> None:
    done, _ = drift("eval", "run", "--judge", "offline", "--messages", str(SAMPLE), "--agents", "michael",
                    "--allow-incomparable")  # fmt: skip
    assert done.returncode in (0, 1), done.stderr[-2000:]
    assert "offline heuristic judge (no LLM)" in done.stdout and "cannot read meaning" in done.stdout


@pytest.mark.timed
def test_worker_on_a_web_address_it_cannot_listen_on() -> None:
    """192.0.2.1 (TEST-NET-1) is never a local address: binding fails before anything connects."""
    done, elapsed = drift("worker", env={"DRIFT_WEB_HOST": "192.0.2.1", "DRIFT_CONNECT_TIMEOUT_S": "1"})
    assert_one_line_error(done, elapsed, "web server: cannot listen on 192.0.2.1:6066")
