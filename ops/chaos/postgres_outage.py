"""Scenario c: PostgreSQL stops for about 30 s while drafts flow, then starts again.

The gate does not need the database to decide (configurations are cached), so verdicts keep flowing; the sinks
stall and retry (a transient error is never a reason to drop or dead-letter a record) and catch up once the
database is back. Afterwards every correction log is in the table exactly once.
"""

from __future__ import annotations

import asyncio
import time

from ops.chaos.common import (
    Figures,
    Stage,
    collect_verdicts,
    correction_rows,
    prepare,
    random_scores,
    read_all,
    send_stream,
)
from ops.fakes.messages_api import MessagesApiServer
from streams.embedded import start_database
from streams.topics import Topics


async def run(stage: Stage, *, drafts: int = 3_000, rate: float = 60.0, outage_s: float = 30.0,
              agents: int = 20) -> Figures:  # fmt: skip
    names = [f"{stage.prefix}clerk{i}" for i in range(agents)]
    await prepare(stage, names)
    async with MessagesApiServer(random_scores(seed=12)) as judge:
        await stage.start(stage.worker(judge.base_url))
        sending = asyncio.ensure_future(send_stream(stage, names, drafts, rate))
        await asyncio.sleep(5.0)
        await asyncio.to_thread(stage.stack.database.stop)
        stopped = time.monotonic()
        verdicts_during = await _verdicts_now(stage)
        await asyncio.sleep(max(0.0, outage_s - (time.monotonic() - stopped)))
        verdicts_after_outage = await _verdicts_now(stage)
        stage.stack.database = await asyncio.to_thread(start_database, stage.stack.root)
        down_s = time.monotonic() - stopped
        stream = await sending
        verdicts = await collect_verdicts(stage, stream, timeout_s=120.0)
        rows, duplicate_rows = await correction_rows(stage, stream.run_id, len(verdicts.seen), timeout_s=120.0)
    lost = len(stream.drafts - {draft_id for draft_id, _ in verdicts.seen})
    return {
        "drafts sent": len(stream.drafts),
        "database down (s)": round(down_s, 1),
        "verdicts while it was down": verdicts_after_outage - verdicts_during,
        "verdicted": len(verdicts.seen),
        "lost": lost,
        "conflicting verdicts": verdicts.conflicting,
        "correction_logs rows": rows,
        "duplicate rows": duplicate_rows,
        "missing rows": len(verdicts.seen) - rows,
        "ok": int(lost == 0 and verdicts.conflicting == 0 and duplicate_rows == 0 and rows == len(verdicts.seen)
                  and verdicts_after_outage > verdicts_during),
    }  # fmt: skip


async def _verdicts_now(stage: Stage) -> int:
    """How many verdicts are on the topic right now (a quick read, not a wait)."""
    records = await read_all(stage.settings, Topics(stage.prefix).verdicts, lambda rs: False, timeout_s=1.5)
    return len(records)
