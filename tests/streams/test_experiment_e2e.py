"""End-to-end: `drift experiment run` of ``brainstorming-average`` on the embedded stack, every metric of its
report showing the effect planted by scripted judges and a scripted actor (tests/streams/experiment_support.py
says how), and a SIGKILLed run resumed to the same scores. The debate scenario, Ctrl-C and the budget cap are in
test_experiment_partial_e2e.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.stack import Scenario
from tests.streams.experiment_support import SCENARIO, check_kill_and_resume, check_planted_directions, start

pytestmark = pytest.mark.e2e


async def test_planted_effects_and_a_killed_run_resumed(scenario: Scenario, tmp_path: Path) -> None:
    common, slow = await start(scenario, tmp_path)
    whole = await check_planted_directions(scenario, SCENARIO, common)
    await check_kill_and_resume(scenario, common, slow, whole)
