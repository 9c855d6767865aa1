"""A first user's commands through the real entry point, no stack needed (issue 18).

Bad input: exit 2, one line starting ``drift:``, no traceback; the bound on the time it takes to fail is tested in
test_first_run_timed_cli.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.models import AgentConfig
from streams.embedded import free_port
from tests.stack import REPO
from tests.streams.cli.first_run_support import drift

SAMPLE = REPO / "ops" / "examples" / "office_conversation.jsonl"


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


# -- points 6, 7: one line, exit 2 (quickly: test_first_run_timed_cli.py) ------------------------------------


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
