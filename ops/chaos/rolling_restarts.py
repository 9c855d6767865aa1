"""Scenario: rolling deploys and scale events under a steady stream (issue 34).

200 agents send drafts at a steady rate, 100 of them with checks configured (half reject a failed draft, half
ask for a retry; the judge answers 9 or 2 at random, so a draft judged twice, or once without its checks,
shows). Meanwhile, with graceful stops (SIGTERM, as a deploy does) only:

1. **rolling**: each of the two workers in turn is stopped and a new one started once it has exited;
2. **all at once**: both workers are stopped at the same moment and two new ones started together;
3. **scale**: one worker is stopped (two to one), one started (one to two: the scale-out) and one stopped again
   (back to one).

The properties are those of the crash scenarios: 0 lost, 0 conflicting verdicts, 0 drafts with two decisions, 0
wrong or unchecked decisions, ``run_messages`` holding exactly the committed drafts and ``correction_logs`` no
row twice, no worker dying on its own. The waiting figures: per phase, the longest wait from a draft's send to
its verdict (the verdict record's timestamp) among the drafts sent during that phase, beside the normal
latency (median of the drafts sent before the first event).

A restart that does not become ready within :data:`READY_BOUND_S` is a figure (``starts not ready in time``),
not a hang: the worker is stopped and started again; so is a graceful stop that has not ended after
:data:`STOP_BOUND_S` (the worker is then killed) (issue 34's first point, a group that never becomes ready
after a simultaneous restart, is another helper's; the count shows whether it still happens).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import statistics
import time
from signal import SIGKILL
from typing import Any

import orjson
from aiokafka import AIOKafkaProducer

from ops.chaos.common import (
    Figures,
    Stage,
    correction_rows,
    draft_record,
    message_ids,
    prepare,
    random_scores,
    read_all,
)
from ops.chaos.restart_checks import REJECTING, RETRYING, ZERO, _judge
from ops.chaos.wire import deaths
from ops.fakes.messages_api import MessagesApiServer
from streams.embedded import WorkerProcess
from streams.wire.kafka import client_kwargs
from streams.wire.topics import Topics

READY_BOUND_S = 90.0  # a start that is not ready by then is counted and retried
COLLECT_S = 600.0  # verdicts are read until every draft has one or this long (a loaded machine has a backlog)
STOP_BOUND_S = 60.0  # a graceful stop that has not ended by then is counted and the worker killed
SETTLE_S = 12.0  # between events: the group settles and the backlog drains


class Rollout:
    """The stage's live workers, the judge they use, what happened to them, and when each phase began."""

    def __init__(self, stage: Stage, judge_url: str) -> None:
        self.stage, self.judge_url = stage, judge_url
        self.live: list[WorkerProcess] = []
        self.stopped: list[WorkerProcess] = []
        self.late_starts = 0
        self.hung_stops = 0
        self.phases: list[tuple[str, float]] = []  # (name, wall-clock start)

    async def start(self, count: int = 1) -> None:
        """Start ``count`` workers together; each is retried once when it is not ready in time."""
        await asyncio.gather(*(self._start_one() for _ in range(count)))

    async def _start_one(self) -> None:
        for _ in range(2):
            worker = self.stage.worker(self.judge_url)
            try:
                await asyncio.to_thread(worker.start, READY_BOUND_S)
            except Exception:  # not ready in time (the start stops it): counted, then started afresh
                self.late_starts += 1
                self.stopped.append(worker)
                continue
            self.live.append(worker)
            return
        raise RuntimeError(f"a worker did not become ready in {READY_BOUND_S:g} s twice")

    async def stop(self, count: int = 1) -> None:
        """SIGTERM the ``count`` oldest workers at the same moment; return once they have exited."""
        leaving, self.live = self.live[:count], self.live[count:]
        self.stopped.extend(leaving)
        await asyncio.gather(*(asyncio.to_thread(worker.stop, STOP_BOUND_S) for worker in leaving))
        # WorkerProcess.stop SIGKILLs a worker still running after the bound: a graceful stop that hung
        self.hung_stops += sum(1 for w in leaving if w.process is not None and w.process.returncode == -SIGKILL)

    def phase(self, name: str) -> None:
        self.phases.append((name, time.time()))


async def paced_stream(stage: Stage, agents: list[str], rate: float, stop: asyncio.Event) -> dict[str, float]:
    """Drafts round-robin over ``agents`` at ``rate`` per second until ``stop``; draft id -> send time (wall)."""
    run_id, sent = f"{stage.prefix}run", {}
    producer = AIOKafkaProducer(**client_kwargs(stage.settings), linger_ms=5, acks="all")
    await producer.start()
    started, n = time.monotonic(), 0
    try:
        while not stop.is_set():
            key, value = draft_record(run_id, n, agents[n % len(agents)])
            sent[f"{run_id}-{n}"] = time.time()
            await producer.send(Topics(stage.prefix).drafts, value, key=key)
            n += 1
            if (ahead := started + n / rate - time.monotonic()) > 0:
                await asyncio.sleep(ahead)
        await producer.flush()
    finally:
        await producer.stop()
    return sent


async def choreography(rollout: Rollout) -> None:
    """The three phases, :data:`SETTLE_S` apart (see the module's docstring)."""
    rollout.phase("rolling")
    for _ in range(2):
        await rollout.stop()
        await rollout.start()
        await asyncio.sleep(SETTLE_S)
    rollout.phase("all at once")
    await rollout.stop(2)
    await rollout.start(2)
    await asyncio.sleep(SETTLE_S)
    rollout.phase("scale")
    await rollout.stop()
    await asyncio.sleep(SETTLE_S)
    await rollout.start()
    await asyncio.sleep(SETTLE_S)
    await rollout.stop()
    await asyncio.sleep(SETTLE_S)


async def run(stage: Stage, *, rate: float | None = None, agents: int = 200, configured: int = 100,
              lead_s: float = 8.0) -> Figures:  # fmt: skip
    """``rate``: drafts per second (default 100, or ``CHAOS_RATE`` from the environment: a loaded machine that
    cannot judge 100 per second would measure its backlog, not the hand-overs)."""
    rate = rate or float(os.environ.get("CHAOS_RATE", "100"))
    names = [f"{stage.prefix}agent{i}" for i in range(agents)]
    rejecting, retrying = names[0:configured:2], names[1:configured:2]
    await prepare(stage, rejecting, config=REJECTING)
    await prepare(stage, retrying, config=RETRYING)
    async with MessagesApiServer(random_scores(seed=34)) as judge:
        rollout = Rollout(stage, judge.base_url)
        await rollout.start(2)
        stop = asyncio.Event()
        sending = asyncio.ensure_future(paced_stream(stage, names, rate, stop))
        try:
            await asyncio.sleep(lead_s)
            await choreography(rollout)
        finally:
            stop.set()
            sent = await sending
        verdicts, arrivals = await _collect(stage, set(sent))
    figures = _judge(verdicts, set(sent), set(rejecting), set(retrying)) | await _rows(stage, verdicts)
    figures |= {
        "worker deaths": deaths(stage, rollout.stopped),
        "graceful stops": len(rollout.stopped) - rollout.late_starts,
        "starts not ready in time (retried)": rollout.late_starts,
        "graceful stops that hung (killed after 60 s)": rollout.hung_stops,
        "drafts per second": rate,
        **waiting(sent, arrivals, rollout.phases),
    }
    rows_ok = figures["duplicate rows"] == 0 and figures["correction_logs rows"] == len(verdicts)
    figures["ok"] = int(all(figures[key] == 0 for key in ZERO) and rows_ok)
    return figures


async def _rows(stage: Stage, verdicts: dict[str, list[dict[str, Any]]]) -> Figures:
    """``run_messages`` against the committed drafts, and ``correction_logs`` rows (one per verdict, none twice)."""
    run_id = f"{stage.prefix}run"
    committed = {draft_id for draft_id, v in verdicts.items() if {r["decision"] for r in v} == {"commit"}}
    rows = await message_ids(stage, run_id, len(committed))
    logs, duplicate_logs = await correction_rows(stage, run_id, len(verdicts))
    return {
        "run_messages rows": len(rows),
        "rows missing (committed, no row)": len(committed - rows),
        "rows without a commit": len(rows - committed),
        "correction_logs rows": logs,
        "duplicate rows": duplicate_logs,
    }


async def _collect(stage: Stage, ids: set[str]) -> tuple[dict[str, list[dict[str, Any]]], dict[str, float]]:
    """Every verdict of the run per draft (as :func:`ops.chaos.restart_checks._verdicts`) and each draft's first
    verdict's record timestamp (wall clock, seconds)."""

    def complete(records: list[Any]) -> bool:
        return ids <= {orjson.loads(r.value)["draft_id"] for r in records}

    found: dict[str, list[dict[str, Any]]] = {}
    first: dict[str, float] = {}
    for record in await read_all(stage.settings, Topics(stage.prefix).verdicts, complete, timeout_s=COLLECT_S):
        verdict = orjson.loads(record.value)
        if verdict["draft_id"] in ids:
            found.setdefault(verdict["draft_id"], []).append(verdict)
            first[verdict["draft_id"]] = min(first.get(verdict["draft_id"], float("inf")), record.timestamp / 1000)
    return found, first


def waiting(sent: dict[str, float], arrivals: dict[str, float], phases: list[tuple[str, float]]) -> Figures:
    """The normal wait (median before the first phase) and, per phase, the longest wait of a draft sent in it."""
    bounds = [*phases, ("end", float("inf"))]
    before = [arrivals[d] - t for d, t in sent.items() if d in arrivals and t < phases[0][1]]
    out: Figures = {"normal wait, median (s)": round(statistics.median(before), 2) if before else -1.0}
    for (name, start), (_, end) in itertools.pairwise(bounds):
        waits = [arrivals[d] - t for d, t in sent.items() if d in arrivals and start <= t < end]
        out[f"longest wait, {name} (s)"] = round(max(waits), 2) if waits else -1.0
    return out
