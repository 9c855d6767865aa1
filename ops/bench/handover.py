"""What a hand-over costs the drafts in flight: a graceful stop, a join and a SIGKILL of a ``drift worker`` under a
steady stream, each beside the broker's floor measured in the same run (issue 34).

On a private embedded stack (Tansu + PostgreSQL): one worker starts alone (its start to ready on a fresh stack,
phase by phase, from its ``worker started in`` line: :mod:`streams.worker.startup`), a second joins, then 200
agents send 100 drafts/s (similarity on, offline judge; each draft's send time and its verdict's arrival are
recorded here) while, one after the other, the oldest worker (the group's leader) is stopped (SIGTERM), a worker
joins, a worker is killed (SIGKILL), a worker joins, the newest worker (a follower) is stopped and a worker joins
again, ``--settle`` seconds apart. Before and after each event every worker's
``/partitions`` page says which drafts partitions it is active for: a partition whose owner changed *moved*.

Per event, over the drafts sent from 1 s before it until ``WINDOW_S`` after (after the new worker is ready, for
a join: it joins the group at the end of its start-up): the longest wait for a verdict of
a moved partition and of one that did not move, and each beyond the normal latency (the median of the 5 s
before the event); for a graceful stop, also when the stopped worker's consumer left the group, from its
``worker stopped in`` line (:mod:`streams.runtime.stopping`: ``handover_stop*_left_group_s``). The floor
(:mod:`ops.bench.handover_floor`) is a bare aiokafka group with the same group timeouts doing the same leave and
join. Every figure is also in ``results.json`` (``handover_*``).

Run from the repository root: ``.venv/bin/python -m ops.bench.handover [--rounds N] [--settle S]``; extra
``DRIFT_*`` variables in the environment reach the workers (and the floor's timeouts), so a lever can be
measured by setting it. Bounded: every wait has a deadline; the stack is removed at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson
from aiokafka import AIOKafkaProducer, TopicPartition

from engine.settings import Settings
from ops.bench.common import RESULTS_PATH, machine_info, merge_results
from ops.bench.gate import _configure, _worker, draft_text
from ops.bench.handover_check import post_mortem
from ops.bench.handover_floor import measure_floor
from streams.embedded import EmbeddedStack, WorkerProcess, start_stack
from streams.runtime.fetchwait import kafka_consumer
from streams.runtime.restore import agent_partition
from streams.runtime.stopping import UNTIL_LEFT
from streams.wire.kafka import create_topics

AGENTS = 200
RATE = 100.0
PARTITIONS = 3
BEFORE_S = 1.0  # drafts sent this long before an event count as affected by it
WINDOW_S = 12.0  # ... and those sent this long after it
#: "stop" stops the oldest worker (the group's leader: the first member of a group leads it on the embedded broker,
#: whose leader then waits out its session, docs/known-issues.md), "stop_follower" the newest one.
EVENTS = ("stop", "join", "kill", "join", "stop_follower", "join")
STARTED = re.compile(r"worker started in ([0-9.]+) s: (.*)$")
STOPPED = re.compile(r"worker stopped in ([0-9.]+) s: (.*)$")


@dataclass
class Traffic:
    """Draft id -> (send time, partition); draft id -> the first verdict's arrival (``time.monotonic``)."""

    sent: dict[str, tuple[float, int]] = field(default_factory=dict)
    answered: dict[str, float] = field(default_factory=dict)
    offsets: dict[str, int] = field(default_factory=dict)  # draft id -> its offset in its drafts partition

    def latencies(self, start: float, end: float, partitions: set[int] | None = None) -> list[float]:
        """Waits of the answered drafts sent in [start, end) (of ``partitions`` only, if given)."""
        return [self.answered[d] - t for d, (t, p) in self.sent.items()
                if start <= t < end and d in self.answered and (partitions is None or p in partitions)]  # fmt: skip

    def unanswered(self, before: float) -> int:
        return sum(1 for d, (t, _) in self.sent.items() if t < before and d not in self.answered)


async def send_stream(settings: Settings, traffic: Traffic, stop: asyncio.Event, rate: float) -> None:
    """Drafts round-robin over the agents at ``rate`` per second until ``stop`` is set."""
    producer = AIOKafkaProducer(bootstrap_servers=settings.broker, linger_ms=2, acks="all")
    await producer.start()
    started, n = time.monotonic(), 0
    try:
        while not stop.is_set():
            agent = f"agent-{n % AGENTS}"
            draft_id = f"h{n}"
            body = orjson.dumps({"draft_id": draft_id, "agent_id": agent, "text": draft_text(n)})
            traffic.sent[draft_id] = (time.monotonic(), agent_partition(agent, PARTITIONS))
            sent = await producer.send(settings.topic("drafts"), body, key=agent.encode())
            sent.add_done_callback(_noted(traffic, draft_id))
            n += 1
            if (ahead := started + n / rate - time.monotonic()) > 0:
                await asyncio.sleep(ahead)
        await producer.flush()
    finally:
        await producer.stop()


def _noted(traffic: Traffic, draft_id: str) -> Any:
    """A delivery callback that notes the draft's offset (the post-mortem of unanswered drafts reads it)."""

    def note(delivery: asyncio.Future[Any]) -> None:
        if not delivery.cancelled() and delivery.exception() is None:
            traffic.offsets[draft_id] = delivery.result().offset

    return note


async def read_verdicts(settings: Settings, traffic: Traffic, started: asyncio.Event) -> None:
    """Record each draft's first verdict arrival (runs until cancelled)."""
    consumer = kafka_consumer(settings, fetch_max_wait_ms=10, enable_auto_commit=False)
    await consumer.start()
    try:
        tps = [TopicPartition(settings.topic("verdicts"), p) for p in range(PARTITIONS)]
        consumer.assign(tps)
        await consumer.seek_to_end(*tps)
        started.set()
        while True:
            batch = await consumer.getmany(timeout_ms=50, max_records=2000)
            now = time.monotonic()
            for records in batch.values():
                for record in records:
                    traffic.answered.setdefault(orjson.loads(record.value)["draft_id"], now)
    finally:
        await consumer.stop()


async def owned(worker: WorkerProcess, topic: str) -> set[int]:
    """The drafts partitions ``worker`` is active for (its ``/partitions`` page; empty if it does not answer)."""
    try:
        async with httpx.AsyncClient(timeout=5.0) as client:
            page = (await client.get(f"http://127.0.0.1:{worker.env['DRIFT_WEB_PORT']}/partitions")).json()
        return set(page.get("drafts", []))
    except (httpx.HTTPError, ValueError):
        return set()


def startup_phases(worker: WorkerProcess) -> dict[str, float]:
    """The worker's ``worker started in`` line as {"total": s, phase: s, ..., "cpu": s} (empty if absent)."""
    return _phases(worker, STARTED)


def stop_phases(worker: WorkerProcess) -> dict[str, float]:
    """The worker's ``worker stopped in`` line (:mod:`streams.runtime.stopping`) as {"total": s, phase: s, ...}."""
    return _phases(worker, STOPPED)


def _phases(worker: WorkerProcess, pattern: re.Pattern[str]) -> dict[str, float]:
    for line in reversed(worker.log_path.read_text(encoding="utf-8", errors="replace").splitlines()):
        if found := pattern.search(line):
            listed, _, cpu = found[2].partition("; cpu ")
            phases = {"total": float(found[1])} | ({"cpu": float(cpu.split()[0])} if cpu else {})
            for part in listed.split(", "):
                name, seconds = part.rsplit(" ", 2)[0], part.rsplit(" ", 2)[1]
                phases[name] = float(seconds)
            return phases
    return {}


@dataclass
class Run:
    stack: EmbeddedStack
    settings: Settings
    traffic: Traffic = field(default_factory=Traffic)
    workers: list[WorkerProcess] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)

    verbose: bool = False

    def new_worker(self) -> WorkerProcess:
        extra = ("--verbose",) if self.verbose else ()
        worker = _worker(self.stack, self.settings, "offline", env=_drift_env(), extra=extra)
        worker.log_path = worker.log_path.with_name(f"handover-worker-{len(self.events)}-{len(self.workers)}.log")
        return worker

    async def start(self) -> tuple[WorkerProcess, float]:
        worker, started = self.new_worker(), time.monotonic()
        await asyncio.to_thread(worker.start, 120.0)
        self.workers.append(worker)
        return worker, time.monotonic() - started

    async def ownership(self, timeout_s: float = 20.0) -> dict[int, int]:
        """Drafts partition -> the owning worker (its ``id``; -1: no worker claimed it within ``timeout_s``, as in
        a rebalance that is still going on)."""
        topic, deadline = self.settings.topic("drafts"), time.monotonic() + timeout_s
        while True:
            out = {p: -1 for p in range(PARTITIONS)}
            for worker in self.workers:
                for partition in await owned(worker, topic):
                    out[partition] = id(worker)
            if -1 not in out.values() or time.monotonic() > deadline:
                return out
            await asyncio.sleep(0.5)


def _drift_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k.startswith("DRIFT_GROUP_")}


async def event(run: Run, kind: str, settle_s: float) -> dict[str, Any]:
    """One event, then ``settle_s``; its figures (see the module's docstring)."""
    before = await run.ownership(timeout_s=5.0)
    at = time.monotonic()
    figures: dict[str, Any] = {"event": kind}
    if kind == "join":
        worker, figures["ready_s"] = await run.start()
        figures["phases"] = startup_phases(worker)
    else:
        victim = run.workers.pop(-1 if kind == "stop_follower" else 0)
        await asyncio.to_thread(victim.kill if kind == "kill" else victim.stop, *(() if kind == "kill" else (60.0,)))
        figures["exit_s"] = time.monotonic() - at
        if kind != "kill" and (stopped := stop_phases(victim)):  # no line (it was killed after all): no figure
            figures["left_s"] = sum(stopped.get(p, 0.0) for p in UNTIL_LEFT)  # what its partitions waited for
    await asyncio.sleep(max(0.0, at + settle_s - time.monotonic()))
    after = await run.ownership()
    figures["moved"] = sorted(p for p in range(PARTITIONS) if before[p] != after[p] or after[p] == -1)
    figures["at"] = at
    return figures


def waits(
    traffic: Traffic, at: float, moved: set[int], until: float = 0.0, stop: float = float("inf")
) -> dict[str, float]:
    """The event's wait figures (seconds); a group with no draft gets -1. ``until``: seconds after ``at`` the
    window starts to count ``WINDOW_S`` from (a joining worker's start to ready: it joins the group at its end);
    ``stop``: the next event's time, where the window ends at the latest (its drafts are that event's)."""
    normal = traffic.latencies(at - 6.0, at - BEFORE_S)
    p50 = statistics.median(normal) if normal else 0.0
    stayed = set(range(PARTITIONS)) - moved
    out = {"normal_p50_s": p50}
    for name, partitions in (("moved", moved), ("unmoved", stayed)):
        found = traffic.latencies(at - BEFORE_S, min(at + until + WINDOW_S, stop - BEFORE_S), partitions)
        out[f"{name}_max_s"] = max(found) if found else -1.0
        out[f"{name}_extra_s"] = max(found) - p50 if found else -1.0
    first = traffic.latencies(at, at + 2.0)
    out["sent_in_2s_after_max_s"] = max(first) if first else -1.0
    return out


async def measure(rounds: int, settle_s: float, rate: float = RATE, keep: bool = False) -> dict[str, Any]:
    """The whole run on a private stack; every figure, the floor's included. ``keep``: leave the stack's
    directory (the workers' logs) and write every draft's send and verdict times to ``traffic.json`` in it."""
    stack = start_stack()
    settings = Settings.from_env(broker=stack.broker.bootstrap, database_url=stack.database.url,
                                 topic_prefix="handover.")  # fmt: skip
    run = Run(stack, settings, verbose=keep)
    stop, listening = asyncio.Event(), asyncio.Event()
    tasks: list[asyncio.Future[None]] = []
    try:
        floor = await measure_floor(settings, rounds=2)
        await create_topics(settings, partitions=PARTITIONS)
        await _configure(settings, [f"agent-{i}" for i in range(AGENTS)], {"gate_similarity_enabled": True})
        first, fresh_s = await run.start()
        _, join_idle_s = await run.start()
        tasks.append(asyncio.ensure_future(read_verdicts(settings, run.traffic, listening)))
        async with asyncio.timeout(30.0):
            await listening.wait()
        tasks.append(asyncio.ensure_future(send_stream(settings, run.traffic, stop, rate)))
        await _steady(run.traffic, rate)  # a steady state before the first event
        for _ in range(rounds):
            for kind in EVENTS:
                run.events.append(await event(run, kind, settle_s))
        stop.set()
        await asyncio.gather(tasks[1], _drain(run.traffic, quiet_s=60.0))  # the last sends, then their verdicts
        lost = await post_mortem(settings, run.traffic, PARTITIONS)  # before the broker stops
        return {"post_mortem": lost, "floor": floor, "fresh": {"ready_s": fresh_s, "phases": startup_phases(first)},
                "join_idle_s": join_idle_s, "events": run.events, "traffic": run.traffic}  # fmt: skip
    finally:
        stop.set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for worker in run.workers:
            await asyncio.to_thread(worker.stop, 30.0)
        stack.stop()
        if keep:
            _dump(run, stack.root)
        else:
            shutil.rmtree(stack.root, ignore_errors=True)


def _dump(run: Run, root: Any) -> None:
    """Every draft (send time, partition, verdict time or null) and the events, for a timeline."""
    traffic = run.traffic
    rows = {d: (t, p, traffic.answered.get(d)) for d, (t, p) in traffic.sent.items()}
    events = [{k: v for k, v in e.items() if k in ("event", "at", "moved", "ready_s", "exit_s")} for e in run.events]
    (root / "traffic.json").write_bytes(orjson.dumps({"drafts": rows, "events": events}))
    print(f"kept {root} (worker logs, traffic.json)")


async def _steady(traffic: Traffic, rate: float, timeout_s: float = 120.0) -> None:
    """Until 5 s of drafts have their verdicts (bounded), then 5 s more: the normal latency before any event."""
    deadline = time.monotonic() + timeout_s
    while len(traffic.answered) < 5 * rate and time.monotonic() < deadline:
        await asyncio.sleep(0.5)
    await asyncio.sleep(5.0)


async def _drain(traffic: Traffic, quiet_s: float, poll_s: float = 0.5) -> None:
    """Wait until every draft sent has a verdict, or until no verdict arrived for ``quiet_s``: an overloaded
    gate's backlog drains (its waits are in the figures), a gate that stopped answering ends the wait, and its
    drafts count as unanswered."""
    last, quiet_since = len(traffic.answered), time.monotonic()
    while traffic.unanswered(time.monotonic()) and time.monotonic() - quiet_since < quiet_s:
        await asyncio.sleep(poll_s)
        if len(traffic.answered) != last:
            last, quiet_since = len(traffic.answered), time.monotonic()


def results(found: dict[str, Any], settings: Settings) -> dict[str, float]:
    """The flat figures for results.json: the worst of each kind of event, the floor's medians."""
    traffic: Traffic = found["traffic"]
    out: dict[str, float] = {
        "handover_floor_leave_s": statistics.median(found["floor"]["leave"]),
        "handover_floor_join_s": statistics.median(found["floor"]["join"]),
        "handover_floor_kill_s": statistics.median(found["floor"]["kill"]),
        "handover_session_timeout_s": settings.group_session_timeout_s,
        "worker_start_ready_fresh_s": found["fresh"]["ready_s"],
        "worker_join_ready_idle_s": found["join_idle_s"],
        "handover_unanswered": traffic.unanswered(time.monotonic()),
        "handover_unanswered_decided": found["post_mortem"].get("decided_missed_by_reader", 0),
        "handover_drafts": len(traffic.sent),
    }
    for phase, seconds in found["fresh"]["phases"].items():
        out[f"worker_start_{phase.replace(' ', '_')}_s"] = seconds
    nexts = [e["at"] for e in found["events"][1:]] + [float("inf")]
    for e, stop in zip(found["events"], nexts, strict=True):
        e.update(waits(traffic, e["at"], set(e["moved"]), e.get("ready_s", 0.0), stop))
    for kind in ("stop", "stop_follower", "join", "kill"):
        events = [e for e in found["events"] if e["event"] == kind]
        if not events:
            continue
        for key in ("moved_max_s", "unmoved_max_s", "unmoved_extra_s", "sent_in_2s_after_max_s", "normal_p50_s"):
            out[f"handover_{kind}_{key}"] = max(e[key] for e in events)
        if kind == "join":
            out["worker_join_ready_streaming_s"] = max(e["ready_s"] for e in events)
        else:
            out[f"handover_{kind}_exit_s"] = max(e["exit_s"] for e in events)
        if left := [e["left_s"] for e in events if "left_s" in e]:
            out[f"handover_{kind}_left_group_s"] = max(left)
    return {key: round(value, 3) for key, value in out.items()}


def report(figures: dict[str, float], found: dict[str, Any]) -> None:
    leave, join, kill = (figures[f"handover_floor_{kind}_s"] for kind in ("leave", "join", "kill"))
    print(f"floor (bare aiokafka group, same timeouts): leave {leave:.2f} s, join {join:.2f} s, SIGKILL {kill:.2f} s "
          f"(each: {found['floor']})")  # fmt: skip
    print(f"fresh worker start to ready {figures['worker_start_ready_fresh_s']:.2f} s: {found['fresh']['phases']}")
    for e in found["events"]:
        extra = f", ready in {e['ready_s']:.2f} s {e['phases']}" if "ready_s" in e else f", exit {e['exit_s']:.2f} s"
        extra += f", left its group after {e['left_s']:.2f} s" if "left_s" in e else ""
        print(f"{e['event']:<5} moved {e['moved']}: moved max {e['moved_max_s']:.2f} s, unmoved max "
              f"{e['unmoved_max_s']:.2f} s (normal p50 {e['normal_p50_s']:.2f} s){extra}")  # fmt: skip
    if found["post_mortem"]:
        print(f"unanswered, looked up on the broker: {found['post_mortem']}")
    for key, value in figures.items():
        print(f"  {key:<48}{value:>10.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m ops.bench.handover")
    parser.add_argument("--rounds", type=int, default=1, help="cycles of the six events (default 1)")
    parser.add_argument("--settle", type=float, default=15.0, help="seconds between events (default 15)")
    parser.add_argument("--rate", type=float, default=RATE, help=f"drafts per second (default {RATE:g})")
    parser.add_argument("--keep", action="store_true", help="keep the stack's directory: worker logs, traffic.json")
    args = parser.parse_args()
    info = machine_info()
    load = "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    print(f"machine: {info['cpu']}, {info['cores']} cores, Python {info['python']}; load average {load}", flush=True)
    found = asyncio.run(measure(args.rounds, args.settle, args.rate, args.keep))
    figures = results(found, Settings.from_env())
    figures["handover_load_average_1m"] = round(os.getloadavg()[0], 2)
    figures["handover_rate_per_s"] = args.rate
    report(figures, found)
    merge_results(RESULTS_PATH, figures)
    print(f"written to {RESULTS_PATH}")


if __name__ == "__main__":
    main()
