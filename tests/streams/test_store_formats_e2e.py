"""Format runs in PostgreSQL: recording a run twice leaves one row per item, with the latest values."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from engine.formats.results import FormatRun, ItemResult, ItemScore
from streams.store import Store
from streams.store.formats import PostgresRunRecorder
from tests.stack import Stack

pytestmark = pytest.mark.e2e


@pytest.fixture
async def store(stack: Stack) -> AsyncIterator[Store]:
    async with await Store.connect(stack.database.url) as connected:
        yield connected


async def test_a_run_recorded_twice_has_one_row_per_item(store: Store) -> None:
    recorder = PostgresRunRecorder(store)
    items = tuple(
        ItemResult(item_id=f"case-{i}", score=i / 4, verdict="pass", scores=(ItemScore(name="r", type="rubric"),))
        for i in range(3)
    )
    partial = FormatRun(format="agentv", source="x.yaml", target="recorded:a.jsonl", judge="scripted", items=items[:2])
    partial = partial.model_copy(update={"status": "partial"})
    await recorder.record(partial)
    finished = partial.model_copy(update={"status": "completed", "items": items, "summary": {"mean": 0.25}})
    await recorder.record(finished)

    assert await recorder.item_count(finished.run_id) == 3
    runs = [r for r in await recorder.runs("agentv", limit=500) if str(r["run_id"]) == finished.run_id]
    assert len(runs) == 1
    assert runs[0]["status"] == "completed"
    assert runs[0]["summary"] == {"mean": 0.25}
