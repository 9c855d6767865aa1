"""``drift metareason run --database URL`` stores the run in PostgreSQL (format_runs / format_results)."""

from __future__ import annotations

import asyncio
import json

import pytest
from typer.testing import CliRunner

from engine.settings import REPO_ROOT
from streams.cli.metareason import app
from streams.store import Store
from streams.store.formats import PostgresRunRecorder
from tests.stack import Stack

pytestmark = pytest.mark.e2e

FAMILY = REPO_ROOT / "propositions" / "metareason" / "dwight-provocations.yaml"
EXAMPLES = REPO_ROOT / "ops" / "examples" / "metareason"


def test_a_run_is_recorded_once_per_variant(stack: Stack) -> None:
    args = [
        "run", str(FAMILY), "--target", f"recorded:{EXAMPLES / 'dwight-answers.jsonl'}",
        "--judge", f"scripted:{EXAMPLES / 'dwight-judge.yaml'}", "--format", "json", "--database", stack.database.url,
    ]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    run = json.loads(result.stdout)

    async def stored() -> tuple[int, list[dict[str, object]]]:
        async with await Store.connect(stack.database.url) as store:
            recorder = PostgresRunRecorder(store)
            rows = [r for r in await recorder.runs("metareason", limit=500) if str(r["run_id"]) == run["run_id"]]
            return await recorder.item_count(run["run_id"]), rows

    count, rows = asyncio.run(stored())
    assert count == 120 and len(rows) == 1
    assert rows[0]["judge"] == "scripted:dwight-judge" and rows[0]["status"] == "completed"
    summary = rows[0]["summary"]
    assert isinstance(summary, dict) and summary["oracles"]["in_character"]["n"] == 120
