"""``drift demo``: the main job end to end on the embedded stack, as an orchestrator would use it.

Starts embedded Tansu + PostgreSQL, runs a gate worker, enables the gate for the sample cast, plays the
bundled Office conversation through the gate (stimuli straight to the history, every action as a draft),
prints each verdict live and a summary, then stops everything.
"""

from __future__ import annotations

import asyncio
import shutil
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from engine.settings import bundled_example
from streams.cli.common import JudgeOpt, settings_from
from streams.embedded import WorkerProcess, free_port, start_stack

if TYPE_CHECKING:
    from rich.console import Console

    from engine.models import Event
    from engine.settings import Settings
    from streams.client import GateClient
    from streams.wire.payloads import Verdict

app = typer.Typer()

SAMPLE = bundled_example("office_conversation.jsonl")  # package data: present in a wheel install too
DEMO_CONFIG: dict[str, Any] = {
    "gate_adherence_enabled": True,
    "gate_fluency_enabled": True,
    "gate_similarity_enabled": True,
    "gate_adherence_threshold": 5.0,
    "gate_fluency_threshold": 5.0,
    "max_correction_attempts": 1,
}
STYLE = {"passed": "green", "passed_after_retry": "cyan", "corrected": "yellow", "forced_through": "magenta",
         "timeout_pass_through": "blue", "rejected": "red", "skipped": "dim", "not_gated_yet": "dim"}  # fmt: skip


@app.command()
def demo(
    conversation: Annotated[Path, typer.Option(help="Conversation to play (JSONL events).")] = SAMPLE,
    judge: JudgeOpt = None,
    keep: Annotated[bool, typer.Option(help="Keep the embedded database directory afterwards.")] = False,
) -> None:
    """Play the sample conversation through the gate on the embedded stack; print verdicts and a summary."""
    from rich.console import Console

    from engine.evaluation.messages import read_messages
    from streams.worker.shutdown import interrupts_abort, kill_all

    console = Console()
    events = read_messages(conversation).events
    console.print(f"[bold]persona-drift demo[/] · {len(events)} events from {conversation.name}")
    stack = start_stack()
    settings = settings_from(judge=judge, prefix="demo.").with_(
        broker=stack.broker.bootstrap, database_url=stack.database.url, web_port=free_port()
    )
    worker: WorkerProcess | None = None
    try:
        asyncio.run(_prepare(settings, events))
        worker = _start_worker(settings, stack.root, console)
        asyncio.run(_play(settings, events, console))
    finally:
        kill = kill_all(worker.kill if worker else lambda: None, stack.broker.kill, stack.database.kill)
        with interrupts_abort(kill):  # in order: the worker, the broker, the database; a second Ctrl-C: at once
            if worker is not None:
                worker.stop()
            stack.stop()
            if not keep:
                shutil.rmtree(stack.root, ignore_errors=True)


async def _prepare(settings: Settings, events: tuple[Event, ...]) -> None:
    from streams.store import Store
    from streams.wire.kafka import create_topics

    async with await Store.connect(settings.database()) as store:
        await store.migrate()
        for agent in sorted({e.agent_id for e in events if e.kind.value == "action"}):
            await store.set_config(agent, DEMO_CONFIG)
    await create_topics(settings)


def _start_worker(settings: Settings, root: Path, console: Console) -> WorkerProcess:
    env = {"DRIFT_BROKER": settings.broker, "DRIFT_DATABASE_URL": settings.database(),
           "DRIFT_WEB_PORT": str(settings.web_port), "DRIFT_TOPIC_PREFIX": settings.topic_prefix}  # fmt: skip
    args = ["--judge", settings.judge] if settings.judge else []
    started = time.monotonic()
    worker = WorkerProcess.for_prefix(env, root / "worker.log", *args).start(timeout_s=90)
    console.print(f"[dim]{worker.ready_line} ({time.monotonic() - started:.1f}s)[/]")
    return worker


async def _play(settings: Settings, events: tuple[Event, ...], console: Console) -> None:
    from streams.client import GateClient

    verdicts: list[Verdict] = []
    async with GateClient(settings=settings, timeout_s=60) as gate:
        for n, event in enumerate(events):
            if event.kind.value == "stimulus":
                await _publish_stimulus(gate, event, n)
                console.print(f"[dim]{event.source or 'facilitator'} → {event.channel}: {event.text[:90]}[/]")
                continue
            verdict = await gate.converse(
                agent_id=event.agent_id, text=event.text, agent_name=event.agent_name, channel=event.channel,
                run_id="demo", regenerate=_resubmit(event.text),
            )  # fmt: skip
            verdicts.append(verdict)
            _print_verdict(console, event, verdict)
    _print_summary(console, verdicts)


def _resubmit(text: str) -> Callable[[str], str]:
    """The demo has no generator LLM: it resubmits the draft unchanged, so retries end forced through."""
    return lambda _feedback: text


async def _publish_stimulus(gate: GateClient, event: Event, n: int) -> None:
    from streams.wire.payloads import Message

    await gate.publish_message(
        Message(message_id=f"demo-stimulus-{n}", agent_id=event.agent_id, agent_name=event.agent_name,
                text=event.text, kind="stimulus", source=event.source, channel=event.channel, run_id="demo")
    )  # fmt: skip


def _print_verdict(console: Console, event: Event, verdict: Verdict) -> None:
    scores = " ".join(f"{d}={s.score:.1f}" for d, s in verdict.scores.items())
    sim = f" sim={verdict.similarity.score:.2f}" if verdict.similarity else ""
    style = STYLE.get(verdict.outcome, "white")
    console.print(
        f"[bold]{event.agent_name:<15}[/] [{style}]{verdict.outcome:<20}[/] {scores}{sim} "
        f"[dim]{verdict.latency_ms:.0f} ms · {event.text[:60]}[/]"
    )


def _print_summary(console: Console, verdicts: list[Verdict]) -> None:
    from rich.table import Table

    outcomes = Counter(v.outcome for v in verdicts)
    table = Table(title=f"summary · judge: {verdicts[0].judge if verdicts else '-'}")
    table.add_column("outcome")
    table.add_column("drafts", justify="right")
    for outcome, count in outcomes.most_common():
        table.add_row(outcome, str(count))
    console.print(table)
    by_dim: dict[str, list[float]] = {}
    for verdict in verdicts:
        for dim, score in verdict.scores.items():
            if not score.timed_out:
                by_dim.setdefault(dim, []).append(score.score)
    means = ", ".join(f"{d} {sum(v) / len(v):.2f}" for d, v in by_dim.items())
    latencies = sorted(v.latency_ms for v in verdicts)
    p50 = latencies[len(latencies) // 2] if latencies else 0.0
    console.print(f"mean scores: {means}\nverdict latency p50: {p50:.0f} ms over {len(verdicts)} drafts")
