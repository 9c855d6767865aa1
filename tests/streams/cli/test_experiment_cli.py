"""``drift experiment report`` through the real entry point."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.peers import peer, require
from tests.stack import DRIFT

TABLE1 = peer("reference", "tinytroupe-table1")


def test_report_needs_an_input() -> None:
    done = subprocess.run([DRIFT, "experiment", "report"], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "drift: give EXPERIMENT_ID (a stored experiment) or --raw FILE.json (the paper's format)"
    )


def test_run_dry_run_prints_plan_and_bounds_per_arm() -> None:
    command = [DRIFT, "experiment", "run", "brainstorming-average", "--scale", "0.1", "--dry-run",
               "--actor", "scripted", "--judge", "anthropic:claude-haiku-4-5"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False, env=_env())
    assert done.returncode == 0, done.stderr
    out = done.stderr
    assert "4 of 40 sessions per arm" in out and "treatment" in out and "control" in out
    assert "scripted" in out and "$" in out  # the judge is priced, the scripted actor is free and named
    assert out.count("group ") == 4 and "g1-home-chores-r1" in out


def test_table1_dry_run_plans_the_four_scenarios() -> None:
    command = [DRIFT, "experiment", "table1", "--scale", "0.05", "--dry-run", "--actor", "scripted", "--judge",
               "offline"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False, env=_env())
    assert done.returncode == 0, done.stderr
    for name in ("brainstorming-average", "brainstorming-difficult-full", "brainstorming-difficult-variety",
                 "debate-controversial"):  # fmt: skip
        assert name in done.stderr


def test_budget_and_token_caps_exclude_each_other() -> None:
    command = [DRIFT, "experiment", "run", "debate-controversial", "--budget-usd", "1", "--max-tokens", "5"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False, env=_env())
    assert done.returncode == 2 and done.stderr.strip() == "drift: give --budget-usd or --max-tokens, not both"


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"} | {"COLUMNS": "200"}


def test_html_report_of_every_raw_file_with_charts(tmp_path: Path) -> None:
    require(TABLE1)
    files = sorted(TABLE1.glob("*.json"))
    args = [arg for f in files for arg in ("--raw", str(f))]
    out = tmp_path / "report.html"
    done = subprocess.run(
        [DRIFT, "experiment", "report", *args, "--format", "html", "--output", str(out)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    page = out.read_text()
    assert page.count("<h2>") == len(files)
    assert page.count("data:image/png;base64,") == sum(1 for _ in (tmp_path / "charts").glob("*.png"))
    as_json = subprocess.run(
        [DRIFT, "experiment", "report", *args[:2], "--format", "json"], capture_output=True, text=True, timeout=60,
        check=False,
    )  # fmt: skip
    assert json.loads(as_json.stdout)["experiments"][0]["metrics"]
