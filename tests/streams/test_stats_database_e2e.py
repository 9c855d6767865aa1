"""``drift stats --from-database``: TinyTroupe's regeneration statistics from ``correction_logs``, and the outcomes
of silence and of the minimum of actions accepted by the table (migration 004)."""

from __future__ import annotations

import uuid

import pytest

from streams.cli.ops import _database_snapshot
from streams.store import Store
from streams.wire.payloads import CorrectionLog
from tests.stack import Stack


def log(agent: str, draft: str, attempt: int, outcome: str, scores: dict[str, float], decision: str) -> CorrectionLog:
    return CorrectionLog(
        draft_id=draft, attempt_number=attempt, agent_id=agent, original_text="t", decision=decision,
        outcome=outcome,
        dimension_scores={k: {"score": v, "reasoning": "", "timed_out": False} for k, v in scores.items()},
    )  # fmt: skip


@pytest.mark.e2e
async def test_regeneration_statistics_from_the_database(stack: Stack) -> None:
    agent = f"stats-{uuid.uuid4().hex[:8]}"
    logs = [
        log(agent, "a", 1, "corrected", {"adherence": 2.0}, "retry"),  # an original, not a regeneration
        log(agent, "a", 2, "corrected", {"adherence": 3.0}, "retry"),
        log(agent, "a", 3, "forced_through", {"adherence": 5.0}, "commit"),
        log(agent, "b", 1, "corrected", {"adherence": 1.0}, "retry"),
        log(agent, "b", 2, "passed_after_retry", {"adherence": 8.0}, "commit"),
        log(agent, "c", 1, "not_gated_yet", {}, "commit"),
        log(agent, "d", 1, "corrected", {"adherence": 1.0}, "retry"),
        log(agent, "d", 2, "skipped", {}, "skip"),
    ]
    async with await Store.connect(stack.database.url) as store:
        await store.set_config(agent, {"gate_adherence_enabled": True})
        await store.write_correction_logs(logs)
    snapshot = await _database_snapshot(stack.database.url, agent, None)
    assert snapshot["outcomes"]["skipped"] == 1 and snapshot["outcomes"]["not_gated_yet"] == 1
    assert (snapshot["regenerations"], snapshot["failed_regenerations"]) == (3, 2)
    assert snapshot["regeneration_failure_rate"] == pytest.approx(2 / 3)
    assert snapshot["failed_scores"]["adherence"] == {"n": 2, "mean": pytest.approx(4.0), "sd": pytest.approx(1.0)}
    assert snapshot["original_success_rate"] == 0.0  # three judged originals, none passed; c was not judged
