"""Scenario a: SIGKILL a worker again and again while a stream of drafts, malformed records interleaved, flows.

Two workers share the gate; every ``interval_s`` one of them is killed (SIGKILL: no shutdown, no offset commit,
verdicts already sent for drafts whose offsets were not committed) and a fresh one started. Half the agents are
judged (a judge answering at random, so a second judgement shows as a conflict), half have the similarity check
alone, so their drafts are decided inline, a lane batch at a time, with the chained flushes of issue 28.
Afterwards: every draft has a verdict, no ``(draft_id, attempt)`` has two different decisions, every correction
log is in the table once, and every malformed record is in the dead-letter topic.
"""

from __future__ import annotations

import asyncio
import time

from ops.chaos.common import (
    Figures,
    Stage,
    collect_verdicts,
    correction_rows,
    dead_letters,
    prepare,
    random_scores,
    recovery_s,
    send_stream,
)
from ops.fakes.messages_api import MessagesApiServer


async def run(stage: Stage, *, drafts: int = 10_000, kills: int = 5, rate: float = 220.0,
              malformed_every: int = 50, agents: int = 40) -> Figures:  # fmt: skip
    names = [f"{stage.prefix}clerk{i}" for i in range(agents)]
    await prepare(stage, names, inline=names[1::2])
    async with MessagesApiServer(random_scores(seed=10)) as judge:
        workers = list(await asyncio.gather(*(stage.start(stage.worker(judge.base_url)) for _ in range(2))))
        sending = asyncio.ensure_future(send_stream(stage, names, drafts, rate, malformed_every))
        interval_s = drafts / rate / (kills + 1)
        killed_at: list[float] = []
        for _ in range(kills):
            await asyncio.sleep(interval_s)
            victim = workers.pop(0)
            victim.kill()
            killed_at.append(time.time())
            workers.append(await stage.start(stage.worker(judge.base_url)))
        stream = await sending
        verdicts = await collect_verdicts(stage, stream, timeout_s=180.0)
        rows, duplicate_rows = await correction_rows(stage, stream.run_id, len(verdicts.seen))
        letters, _ = await dead_letters(stage, stream.malformed)
    lost = len(stream.drafts - {draft_id for draft_id, _ in verdicts.seen})
    return {
        "drafts sent": len(stream.drafts),
        "malformed sent": stream.malformed,
        "workers killed (SIGKILL)": kills,
        "verdicted": len(verdicts.seen),
        "lost": lost,
        "verdict records (incl. redeliveries)": verdicts.records,
        "conflicting verdicts": verdicts.conflicting,
        "correction_logs rows": rows,
        "duplicate rows": duplicate_rows,
        "missing rows": len(verdicts.seen) - rows,
        "dead letters": letters,
        "seconds to recover (worst kill)": recovery_s(verdicts, killed_at),
        "ok": int(lost == 0 and verdicts.conflicting == 0 and duplicate_rows == 0 and rows == len(verdicts.seen)
                  and letters == stream.malformed),
    }  # fmt: skip
