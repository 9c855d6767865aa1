"""Scenario b: the judge provider misbehaves (the real ``anthropic`` SDK in the worker, against the local
Messages-API fake): 429 with retry-after, 500, 529 overloaded, a hang past the deadline, prose instead of
JSON, a truncated JSON body — and healthy answers between them. Every draft still gets a verdict within the
fail-open deadline plus 1 s, the faulty dimension is marked ``timed_out``, nothing is lost or dead-lettered.

Each agent sends its next draft only after the deadline plus 1 s, as an orchestrator that waits for the verdict
would (200 agents, 70 drafts/s): the figure is the time from the draft's arrival to its verdict, not a queue of
one agent's drafts waiting behind each other.
"""

from __future__ import annotations

import itertools

from ops.chaos.common import Figures, Stage, collect_verdicts, dead_letters, prepare, send_stream
from ops.fakes.messages_api import MessagesApiServer
from ops.fakes.server import Behaviour, ReceivedRequest

DEADLINE_S = 1.5
FAULTS = (
    Behaviour.rate_limited(retry_after=1.0),
    Behaviour.server_error(500),
    Behaviour.overloaded(),
    Behaviour.slow(DEADLINE_S + 5.0),
    Behaviour.malformed(),
    Behaviour.truncated_body(),
    Behaviour.auto(value=9),
)


async def run(stage: Stage, *, drafts: int = 700, rate: float = 70.0, agents: int = 200) -> Figures:
    names = [f"{stage.prefix}clerk{i}" for i in range(agents)]
    await prepare(stage, names)
    cycle = itertools.cycle(FAULTS)

    def next_fault(request: ReceivedRequest) -> Behaviour:
        return next(cycle)

    async with MessagesApiServer(next_fault) as judge:
        await stage.start(stage.worker(judge.base_url, deadline_s=DEADLINE_S))
        stream = await send_stream(stage, names, drafts, rate)
        verdicts = await collect_verdicts(stage, stream, timeout_s=60.0)
        letters, reasons = await dead_letters(stage, 0, timeout_s=2.0)
        calls = len(judge.requests)
    lost = len(stream.drafts - {draft_id for draft_id, _ in verdicts.seen})
    worst_s = round(verdicts.max_latency_ms / 1000.0, 2)
    return {
        "drafts sent": len(stream.drafts),
        "judge calls (1 in 7 healthy)": calls,
        "verdicted": len(verdicts.seen),
        "lost": lost,
        "conflicting verdicts": verdicts.conflicting,
        "verdicts with a timed_out dimension": verdicts.timed_out,
        "slowest verdict (s)": worst_s,
        "limit: deadline + 1 s": DEADLINE_S + 1.0,
        "dead letters": letters,
        "dead-letter reasons": "; ".join(reasons) or "none",
        "ok": int(lost == 0 and verdicts.conflicting == 0 and worst_s <= DEADLINE_S + 1.0 and letters == 0
                  and verdicts.timed_out > 0),
    }  # fmt: skip
