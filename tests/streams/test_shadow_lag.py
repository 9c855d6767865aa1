"""A shadow's samples never wait for a judge slot past the maximum lag: at most as many drafts are judged at
once as the lane has slots, and each is checked for its lag right before its call (issue 30: skip and count,
never queue). Before this, every sample of a batch passed the check at once and then queued for the slots."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from engine.models import ZERO_USAGE
from engine.settings import Settings
from engine.shadow import Shadow, ShadowStatus
from streams.services.shadow import Outcome, Record, Sample, ShadowCache, ShadowService
from streams.services.shadow_judge import ShadowResult
from streams.wire.payloads import Draft

CALL_S = 1.2


class Store:
    async def shadow(self, name: str) -> dict[str, Any]:
        return {"status": ShadowStatus.RUNNING, "spent_tokens": 0, "spent_usd": 0.0}

    async def shadow_attempts(self, name: str, draft_id: str) -> list[dict[str, Any]]:
        return []


class SlowCandidate:
    """A candidate judge that answers after CALL_S, one call at a time (like one budget slot)."""

    def __init__(self) -> None:
        self.slot = asyncio.Semaphore(1)
        self.judged: list[str] = []

    async def __call__(
        self, shadow: Shadow, draft: Draft, live: dict[str, Any], earlier: Sequence[dict[str, Any]]
    ) -> ShadowResult:
        async with self.slot:
            await asyncio.sleep(CALL_S)
        self.judged.append(draft.draft_id)
        return ShadowResult(row={"draft_id": draft.draft_id}, record={}, usage=ZERO_USAGE, usd=None)


async def test_samples_that_would_wait_past_the_maximum_lag_are_skipped_not_queued() -> None:
    settings = Settings(shadow_judge_slots=1, shadow_max_lag_s=2.0)
    candidate, store = SlowCandidate(), Store()

    async def access() -> Any:
        return store

    service = ShadowService(settings, access, ShadowCache(), candidate, send=None)  # type: ignore[arg-type]
    shadow, now = Shadow("strict", "michael", sample=1.0), datetime.now(UTC)
    samples = [
        Sample(shadow, Draft(draft_id=f"d{i}", agent_id="michael", text=f"draft {i}"), Record("drafts", 0, i, 0, None))
        for i in range(4)
    ]
    live = {s.key: {"created_at": now, "latency_ms": 5.0} for s in samples}
    outcome = Outcome([], [], set())
    await service._judge_shadow(samples, live, outcome)
    # d0 is judged at once, d1 at 1.2 s (within the 2 s lag); d2 and d3 would start at 2.4 s and 3.6 s: skipped
    assert candidate.judged == ["d0", "d1"]
    assert sorted(s.draft.draft_id for s in outcome.skipped) == ["d2", "d3"]
