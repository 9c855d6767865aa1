"""``python -m ops.restart_loop``: restart gate workers again and again under a steady stream of drafts, with
per-draft tracing, until a round goes wrong (issue 34's reproduction).

Two ``drift worker`` processes share a private embedded stack (Tansu + PostgreSQL, started here on ``--port``).
A producer sends drafts from many agents at a steady rate (some agents with a judged check, the others gated by
similarity only) and a reader follows the verdict topic, so every draft's partition, offset and verdict time
are known. Each round stops workers gracefully (SIGTERM) and starts them again:

* ``--mode both``: both workers at the same moment, both restarted at once (``systemctl restart``); the round
  fails when a worker does not exit within ``--stop-bound-s`` (it is then killed) or is not ready (``/health``)
  within ``--ready-bound-s``;
* ``--mode one``: one worker (a graceful hand-over to the other), then it is started again (a join).

After every round, every draft sent so far must have its verdict within ``--answer-s``; one that has none fails
the round, and its partition and offset are printed with the workers' logs to read. Exit status 1 when a round
failed. Worker logs (``--verbose``) and the broker's log stay in ``--dir``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import orjson
from aiokafka import AIOKafkaProducer, TopicPartition

from engine.settings import Settings
from streams.client.admin import publish_config
from streams.embedded import start_broker, start_database
from streams.runtime.fetchwait import kafka_consumer
from streams.store import Store
from streams.wire.kafka import create_topics
from streams.wire.topics import Topics

#: The judged check some agents have (the others are gated by similarity alone, decided inline).
CHECKED = {"gate_suitability_enabled": True, "max_correction_attempts": 1}


@dataclass
class Proc:
    """One ``drift worker`` child, started without waiting: readiness is read from its ``/health``."""

    name: str
    env: dict[str, str]
    log: Path
    process: subprocess.Popen[bytes] | None = None
    since: int = 0  # where its latest start begins in the log

    @property
    def port(self) -> int:
        return int(self.env["DRIFT_WEB_PORT"])

    def start(self, prefix: str, judge: str, partitions: int) -> None:
        args = [sys.executable, "-m", "streams.cli", "worker", "--prefix", prefix, "--judge", judge,
                "--partitions", str(partitions), "--verbose"]  # fmt: skip
        self.since = self.log.stat().st_size if self.log.exists() else 0
        with open(self.log, "ab") as out:
            out.write(f"===== start {time.time():.3f} {time.strftime('%H:%M:%S')} =====\n".encode())
            self.process = subprocess.Popen(args, env=self.env, stdout=out, stderr=out, start_new_session=True)

    def terminate(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)

    def wait(self, timeout_s: float) -> bool:
        if self.process is None:
            return True
        try:
            self.process.wait(timeout=timeout_s)
            return True
        except subprocess.TimeoutExpired:
            return False

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    async def health(self) -> tuple[bool, str]:
        try:
            async with httpx.AsyncClient(timeout=1.0) as client:
                reply = await client.get(f"http://127.0.0.1:{self.port}/health")
            body = reply.json()
            return bool(body.get("ready")), str(body.get("waiting_for"))
        except (httpx.HTTPError, ValueError):
            return False, "no answer"


@dataclass
class Trace:
    """Per draft: when it was sent, where it landed, when its first verdict was read."""

    sent: dict[str, float] = field(default_factory=dict)
    where: dict[str, tuple[int, int]] = field(default_factory=dict)
    answered: dict[str, float] = field(default_factory=dict)

    def unanswered(self, older_than_s: float) -> list[str]:
        cut = time.monotonic() - older_than_s
        return [d for d, at in self.sent.items() if at < cut and d not in self.answered]


async def stream(settings: Settings, agents: list[str], rate: float, trace: Trace, stop: asyncio.Event) -> None:
    """Drafts round-robin over ``agents`` at ``rate`` per second until ``stop`` (none at rate 0)."""
    if rate <= 0:
        await stop.wait()
        return
    producer = AIOKafkaProducer(bootstrap_servers=settings.broker, linger_ms=5, acks="all")
    await producer.start()
    topic, started, n = Topics(settings.topic_prefix).drafts, time.monotonic(), 0
    try:
        while not stop.is_set():
            agent, draft_id = agents[n % len(agents)], f"d{n}"
            body = {"draft_id": draft_id, "agent_id": agent, "text": f"{agent} proposes idea {n} for the sale"}
            delivery = await producer.send(topic, orjson.dumps(body), key=agent.encode())
            trace.sent[draft_id] = time.monotonic()
            delivery.add_done_callback(lambda f, d=draft_id: _landed(trace, d, f))
            n += 1
            if (ahead := started + n / rate - time.monotonic()) > 0:
                await asyncio.sleep(ahead)
        await producer.flush()
    finally:
        await producer.stop()


def _landed(trace: Trace, draft_id: str, delivery: asyncio.Future[Any]) -> None:
    if not delivery.cancelled() and delivery.exception() is None:
        meta = delivery.result()
        trace.where[draft_id] = (meta.partition, meta.offset)


async def follow(settings: Settings, partitions: int, trace: Trace, stop: asyncio.Event) -> None:
    """Read the verdict topic from the beginning; note each draft's first verdict."""
    consumer = kafka_consumer(settings, fetch_max_wait_ms=20, enable_auto_commit=False)
    await consumer.start()
    try:
        tps = [TopicPartition(Topics(settings.topic_prefix).verdicts, p) for p in range(partitions)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        while not stop.is_set():
            for records in (await consumer.getmany(timeout_ms=200)).values():
                for record in records:
                    trace.answered.setdefault(orjson.loads(record.value)["draft_id"], time.monotonic())
    finally:
        await consumer.stop()


async def until_ready(workers: list[Proc], bound_s: float) -> dict[str, Any]:
    """Seconds until each worker's ``/health`` says ready (None: not within ``bound_s``), and what it said last."""
    started, ready, said = time.monotonic(), dict[str, float](), dict[str, str]()
    while len(ready) < len(workers) and time.monotonic() - started < bound_s:
        for w in workers:
            if w.name not in ready:
                ok, said[w.name] = await w.health()
                if ok:
                    ready[w.name] = round(time.monotonic() - started, 1)
        await asyncio.sleep(0.25)
    return {w.name: ready.get(w.name) for w in workers} | {f"{n} said": s for n, s in said.items() if n not in ready}


async def answered_all(trace: Trace, within_s: float) -> list[str]:
    """The drafts sent so far that still have no verdict ``within_s`` from now (waits at most that long)."""
    sent = list(trace.sent)
    deadline = time.monotonic() + within_s
    while (missing := [d for d in sent if d not in trace.answered]) and time.monotonic() < deadline:
        await asyncio.sleep(0.5)
    return missing


#: The groups of the consumers beside the gate (their joins are not the gate's): the sinks', monitor's, shadow lane's.
BESIDE_GROUPS = ("-sink-", "-monitor'", "-shadow'")


def phases(proc: Proc) -> dict[str, float | int]:
    """Seconds from the worker's latest start to its (last) join of the gate's group, the end of its restore and its
    readiness, read from its log, and how many times it joined the group since it started."""
    text = proc.log.read_bytes()[proc.since :].decode(errors="replace")
    marks = {
        "joined": "Joined group 'persona-drift",
        "restored": "Done reading from changelog",
        "ready": "Worker ready",
    }
    start = float(text.split()[2]) if text.startswith("=====") else time.time()
    found: dict[str, float | int] = {"joins": 0}
    for line in text.splitlines():
        stamp = _stamp(line)
        for name, mark in marks.items():
            if stamp is not None and mark in line and not any(group in line for group in BESIDE_GROUPS):
                found[name] = round(stamp - start, 1)
                found["joins"] += name == "joined"
    return found


def _stamp(line: str) -> float | None:
    if not line.startswith("[20"):
        return None
    try:
        return time.mktime(time.strptime(line[1:20], "%Y-%m-%d %H:%M:%S")) + int(line[21:24]) / 1000
    except ValueError:
        return None


async def one_round(args: argparse.Namespace, workers: list[Proc], prefix: str, trace: Trace) -> dict[str, Any]:
    """Stop (SIGTERM) the round's workers, start them again, wait for ready and for every draft's verdict."""
    moved = workers if args.mode == "both" else workers[:1]
    stopped_at = time.monotonic()
    for w in moved:
        w.terminate()
    exited = await asyncio.to_thread(lambda: all(w.wait(args.stop_bound_s) for w in moved))
    stop_s = round(time.monotonic() - stopped_at, 1)
    for w in moved:  # a stop that hangs (docs/known-issues.md) would keep its web port and group membership
        w.kill()
    if args.mode == "one":  # the other worker owns every partition now; then the stopped one joins again
        await asyncio.sleep(args.pause_s)
    for w in moved:
        w.start(prefix, args.judge, args.partitions)
    ready = await until_ready(workers, args.ready_bound_s)
    missing = await answered_all(trace, args.answer_s)
    return {
        "stop_s": stop_s,
        "exited": exited,
        "ready_s": ready,
        "phases": {w.name: phases(w) for w in workers},
        "unanswered": missing,
    }


def dump_stacks(workers: list[Proc], root: Path) -> None:
    """The Python stacks of every thread of the workers (``py-spy dump``, when installed) into ``root``."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    for w in workers:
        if w.process is not None and w.process.poll() is None and Path(spy).exists():
            command = [spy, "dump", "--pid", str(w.process.pid)]
            out = subprocess.run(command, check=False, capture_output=True, text=True)
            (root / f"{w.name}-stacks-{int(time.time())}.txt").write_text(out.stdout + out.stderr)


def report_missing(missing: list[str], trace: Trace) -> None:
    for draft_id in missing[:20]:
        partition, offset = trace.where.get(draft_id, (-1, -1))
        print(f"   unanswered {draft_id}: partition {partition} offset {offset}", flush=True)


async def prepare(settings: Settings, agents: list[str], partitions: int) -> None:
    await create_topics(settings, partitions=partitions)
    async with await Store.connect(settings.database_url) as store:
        await store.migrate()
        for i, agent in enumerate(agents):
            config = CHECKED if i % 4 == 0 else {"gate_similarity_enabled": True}
            stored = await store.set_config(agent, config)
            await publish_config(settings, agent, stored.model_dump())


def new_workers(args: argparse.Namespace, settings: Settings, root: Path) -> list[Proc]:
    procs = []
    for i in range(2):
        env = {**os.environ, "DRIFT_BROKER": settings.broker, "DRIFT_DATABASE_URL": settings.database_url,
               "DRIFT_WEB_PORT": str(args.port + 1 + i), "DRIFT_DATA_DIR": str(root / f"w{i}"),
               "DRIFT_JUDGE_DEADLINE_S": "1.5"}  # fmt: skip
        env.pop("ANTHROPIC_API_KEY", None)
        procs.append(Proc(f"w{i}", env, root / f"w{i}.log"))
    return procs


async def rounds(args: argparse.Namespace, settings: Settings, root: Path) -> int:
    agents = [f"clerk{i}" for i in range(args.agents)]
    await prepare(settings, agents, args.partitions)
    workers = new_workers(args, settings, root)
    trace, stop = Trace(), asyncio.Event()
    try:
        for w in workers:
            w.start(settings.topic_prefix, args.judge, args.partitions)
        print("first start:", await until_ready(workers, 120.0), flush=True)
        tasks = [asyncio.ensure_future(c) for c in (stream(settings, agents, args.rate, trace, stop),
                                                    follow(settings, args.partitions, trace, stop))]  # fmt: skip
        failed = 0
        for n in range(args.rounds):
            await asyncio.sleep(args.pause_s)
            result = await one_round(args, workers, settings.topic_prefix, trace)
            ready = result["ready_s"].items()
            bad = not result["exited"] or any(v is None for k, v in ready if " said" not in k) or result["unanswered"]
            failed += bool(bad)
            shown = {k: v for k, v in result.items() if k != "unanswered"}
            print(f"round {n + 1}: {'FAILED ' if bad else ''}{shown} unanswered={len(result['unanswered'])} "
                  f"sent={len(trace.sent)} load={os.getloadavg()[0]:.1f}", flush=True)  # fmt: skip
            report_missing(result["unanswered"], trace)
            if bad:
                dump_stacks(workers, root)
            if bad and args.stop_on_failure:
                break
        stop.set()
        await asyncio.gather(*tasks)
        return 1 if failed else 0
    finally:
        for w in workers:
            w.terminate()
        for w in workers:
            if not w.wait(30.0):
                w.kill()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ops.restart_loop", description=__doc__.split("\n\n")[0].replace("\n", " ")
    )
    parser.add_argument("--mode", choices=("both", "one"), default="both")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--rate", type=float, default=100.0, help="drafts per second")
    parser.add_argument("--agents", type=int, default=200)
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--pause-s", type=float, default=8.0, help="steady stream between rounds")
    parser.add_argument("--ready-bound-s", type=float, default=90.0)
    parser.add_argument("--stop-bound-s", type=float, default=30.0, help="a graceful stop longer than this fails")
    parser.add_argument("--answer-s", type=float, default=60.0)
    parser.add_argument("--port", type=int, default=20100, help="broker port; the workers' web ports follow it")
    parser.add_argument("--dir", type=Path, default=None, help="logs and data (default: a new temporary directory)")
    parser.add_argument("--judge", default="offline")
    parser.add_argument("--stop-on-failure", action="store_true")
    args = parser.parse_args(argv)
    root = (args.dir or Path(tempfile.mkdtemp(prefix="drift-restart-loop-"))).resolve()
    print(f"logs and data in {root}", flush=True)
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o755)  # PostgreSQL runs unprivileged when started by root
    database = start_database(root)
    broker = start_broker(args.port, log_file=root / "tansu.log")
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # a SIGTERM cleans up like Ctrl-C
    try:
        settings = Settings(broker=broker.bootstrap, database_url=database.url, topic_prefix="loop.")
        return asyncio.run(rounds(args, settings, root))
    except KeyboardInterrupt:
        return 130
    finally:
        broker.stop()
        database.stop()


if __name__ == "__main__":
    raise SystemExit(main())
