"""End-to-end: two workers, one of them SIGKILLed mid-stream (drafts whose verdicts were sent but whose offsets
were not committed come back), a judge whose answers are random — and still no ``(draft_id, attempt)`` gets two
different decisions (issue 10, defect 1). The small run of ``make chaos``'s kill-workers scenario
(ops/chaos/kill_workers.py), with one kill: the scenario's five kills in a row, each during the previous one's
recovery, are `make chaos`'s (a second kill here cost the suite 12-15 s for the same property)."""

from __future__ import annotations

import pytest

from ops.chaos import kill_workers
from tests.stack import Scenario

pytestmark = pytest.mark.e2e


async def test_no_attempt_gets_two_different_decisions_when_workers_are_killed(scenario: Scenario) -> None:
    stage = scenario.chaos_stage()
    try:
        figures = await kill_workers.run(stage, drafts=300, kills=1, rate=30.0, malformed_every=30, agents=12)
    finally:
        stage.close()
    records, verdicted = figures["verdict records (incl. redeliveries)"], figures["verdicted"]
    assert isinstance(records, int) and isinstance(verdicted, int) and records > verdicted, f"no redelivery: {figures}"
    assert (figures["lost"], figures["conflicting verdicts"], figures["duplicate rows"]) == (0, 0, 0), figures
    assert figures["missing rows"] == 0 and figures["dead letters"] == figures["malformed sent"], figures
