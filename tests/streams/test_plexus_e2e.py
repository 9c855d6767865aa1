"""`drift plexus evaluate --database URL` stores the run and one row per item in PostgreSQL."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from streams.cli import app
from streams.store import Store
from streams.store.formats import PostgresRunRecorder
from tests.stack import Stack

pytestmark = pytest.mark.e2e

EXAMPLE = Path(__file__).resolve().parents[2] / "ops" / "examples" / "plexus"


def test_an_evaluation_is_recorded_when_a_database_is_configured(stack: Stack) -> None:
    result = CliRunner().invoke(
        app,
        ["plexus", "evaluate", str(EXAMPLE / "persona_drift.yaml"), "--dataset", str(EXAMPLE / "office_labels.csv"),
         "--model", f"scripted:{EXAMPLE / 'rules.yaml'}", "--format", "json", "--database", stack.database.url],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    run_id = json.loads(result.stdout)["run_id"]

    async def stored() -> tuple[int, list[dict[str, object]]]:
        async with await Store.connect(stack.database.url) as store:
            recorder = PostgresRunRecorder(store)
            runs = [r for r in await recorder.runs("plexus", limit=500) if str(r["run_id"]) == run_id]
            return await recorder.item_count(run_id), runs

    count, runs = asyncio.run(stored())
    assert count == 13
    assert [(r["judge"], r["status"]) for r in runs] == [("scripted:rules.yaml", "completed")]
    summary = runs[0]["summary"]
    assert isinstance(summary, dict) and summary["scores"]["Breaks Character"]["compared"] == 13
