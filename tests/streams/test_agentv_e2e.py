"""``drift agentv run --database``: the run and every case land in format_runs / format_results."""

from __future__ import annotations

import asyncio

import pytest
from typer.testing import CliRunner

from streams.cli.agentv import app
from streams.store import Store
from streams.store.formats import PostgresRunRecorder
from tests.stack import Stack
from tests.streams.cli.test_agentv_cli import RUN

pytestmark = pytest.mark.e2e


def test_a_run_is_recorded_in_postgres(stack: Stack) -> None:
    result = CliRunner().invoke(app, [*RUN, "--database", stack.database.url])
    assert result.exit_code == 0, result.output

    async def stored() -> tuple[list[dict[str, object]], int]:
        async with await Store.connect(stack.database.url) as store:
            recorder = PostgresRunRecorder(store)
            runs = [
                r for r in await recorder.runs("agentv", limit=500) if str(r["source"]).endswith("office.eval.yaml")
            ]
            return runs, await recorder.item_count(str(runs[0]["run_id"]))

    runs, items = asyncio.run(stored())
    assert len(runs) == 1
    assert runs[0]["judge"] == "scripted:office_judge"
    assert runs[0]["status"] == "completed"
    assert items == 4
