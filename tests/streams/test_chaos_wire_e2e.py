"""End-to-end: small runs of ``make chaos``'s issue-20 scenarios (ops/chaos/restart_checks.py, oversized.py,
codecs.py, strict_payloads.py), so the suite's code keeps working between its own runs."""

from __future__ import annotations

from typing import Any

import pytest

from ops.chaos import codecs, oversized, restart_checks, strict_payloads
from ops.chaos.common import Figures
from tests.stack import Scenario

pytestmark = pytest.mark.e2e


async def run_small(scenario: Scenario, entry: Any, **kwargs: Any) -> Figures:
    stage = scenario.chaos_stage()
    try:
        figures: Figures = await entry(stage, **kwargs)
    finally:
        stage.close()
    return figures


async def test_oversized_records_are_dead_lettered_and_later_drafts_verdicted(scenario: Scenario) -> None:
    figures = await run_small(scenario, oversized.run, ordinary=8)
    assert figures["dead letters 'record too large'"] == 3 and figures["ok"] == 1, figures
    assert figures["ordinary drafts verdicted"] == 8 and figures["worker deaths"] == 0, figures


async def test_every_codec_is_verdicted_and_a_broken_batch_is_one_dead_letter(scenario: Scenario) -> None:
    figures = await run_small(scenario, codecs.run, per_producer=3)
    assert figures["confluent-kafka snappy verdicted"] == "3/3" and figures["dead letters"] == 1, figures
    assert figures["ok"] == 1, figures


async def test_strict_payloads_are_dead_lettered_with_their_reasons(scenario: Scenario) -> None:
    figures = await run_small(scenario, strict_payloads.run, rounds=1)
    assert [figures[f"{name}: dead letters"] for name in strict_payloads.BAD] == [1, 1, 1, 1], figures
    assert figures["verdicts for invalid payloads"] == 0 and figures["ok"] == 1, figures


async def test_a_restart_with_the_migration_lock_held_decides_every_draft_with_its_checks(scenario: Scenario) -> None:
    figures = await run_small(scenario, restart_checks.run, drafts=400, rate=40.0, agents=20, configured=10,
                              restarts=1, first_s=2.0)  # fmt: skip
    assert figures["restarts seen waiting for the migration on /health"] == 1, figures
    assert (figures["unchecked drafts of configured agents"], figures["rows without a commit"]) == (0, 0), figures
    assert figures["ok"] == 1, figures
