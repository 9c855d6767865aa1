"""A first user's commands against a broker that is not there: one line, quickly (issue 18). Every test here is
``timed`` (it runs while no other test does, tests/conftest.py); they live apart from test_first_run_e2e.py so
that `make test` can start them late, when the other pytest worker runs short tests, not a long one they would
wait for."""

from __future__ import annotations

import json
import uuid

import pytest

from tests.stack import Stack
from tests.streams.cli.first_run_support import FAIL_FAST_S, drift_on, unreachable_broker

pytestmark = [pytest.mark.e2e, pytest.mark.timed]


@pytest.mark.parametrize("command", ["worker", "sinks"])
def test_an_unreachable_broker_is_one_line_after_a_short_wait(stack: Stack, command: str) -> None:
    done, elapsed = drift_on(stack, command, "--prefix", f"t{uuid.uuid4().hex[:8]}.", env=unreachable_broker())
    assert done.returncode == 2, done.stderr[-2000:]
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "cannot reach the Kafka broker" in lines[0], done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "ready" not in done.stdout  # never 'ready' before it is
    assert elapsed < FAIL_FAST_S


def test_config_set_says_when_the_change_was_not_announced(stack: Stack) -> None:
    agent = f"creed-{uuid.uuid4().hex[:6]}"
    done, elapsed = drift_on(stack, "config", "set", agent, "max_action_similarity=0.6", env=unreachable_broker())
    assert done.returncode == 3, done.stderr[-2000:]
    assert f"{agent}: max_action_similarity = 0.6" in done.stdout  # stored, shown as entered
    assert len(done.stderr.splitlines()) == 1, done.stderr
    (line,) = done.stderr.splitlines()
    assert "not announced" in line and f"drift config set {agent} max_action_similarity=0.6" in line
    assert elapsed < FAIL_FAST_S
    shown, _ = drift_on(stack, "config", "show", agent, "--json")
    assert json.loads(shown.stdout)["config"]["max_action_similarity"] == 0.6  # not 0.6000000238418579
