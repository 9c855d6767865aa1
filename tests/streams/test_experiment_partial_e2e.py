"""End-to-end: `drift experiment run` of ``debate-controversial`` on the embedded stack, every metric of its report
showing the planted effect (tests/streams/experiment_support.py says how); an interrupted run (Ctrl-C) and a
budget cap each leave a partial experiment, the capped one still reported."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from streams.store import Store
from tests.stack import Scenario
from tests.streams.experiment_support import (
    DEBATE,
    check_budget_cap,
    check_planted_directions,
    kill_after_first_session,
    start,
)

pytestmark = pytest.mark.e2e


async def test_debate_effects_and_a_ctrl_c_and_a_budget_cap_leave_partial_experiments(
    scenario: Scenario, tmp_path: Path
) -> None:
    common, slow = await start(scenario, tmp_path)
    await check_planted_directions(scenario, DEBATE, common)
    # Ctrl-C: no new session starts, the running one finishes and is stored, the experiment is partial
    interrupted = await kill_after_first_session(scenario, slow, signal.SIGINT)
    async with await Store.connect(scenario.stack.database.url) as store:
        state = await store.pool.fetchval("SELECT status FROM experiments WHERE id = $1", interrupted)
    assert state == "partial"
    await check_budget_cap(scenario, common)
