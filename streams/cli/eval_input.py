"""What ``drift eval run`` and ``drift eval baseline`` evaluate: the input (a messages file, the Postgres
message store or a synthetic conversation), loaded and scored by the judge, with a progress bar on a terminal.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from engine.errors import ConfigurationError

if TYPE_CHECKING:
    from engine.evaluation.harness import AgentResult, HarnessOptions
    from engine.judges.metered import MeteredJudge
    from engine.models import Event
    from engine.settings import Settings


@dataclass(frozen=True)
class Inputs:
    messages: Path | None = None
    run_id: str | None = None
    since: str | None = None
    synthetic: int | None = None
    skip_invalid: bool = False

    def check(self) -> None:
        chosen = [
            self.messages is not None,
            self.run_id is not None or self.since is not None,
            self.synthetic is not None,
        ]
        if sum(chosen) != 1:
            raise ConfigurationError(
                "give exactly one input: --messages FILE, --run-id ID / --since T, or --synthetic N"
            )


@dataclass(frozen=True)
class Loaded:
    events: tuple[Event, ...]
    agent_ids: tuple[str, ...]
    messages_sha256: str


@contextlib.contextmanager
def progress_bar(total: int, label: str) -> Iterator[Callable[[str], None]]:
    """A rich progress bar on stderr when it is a terminal; a no-op callback otherwise."""
    if not sys.stderr.isatty() or total <= 0:
        yield lambda _item: None
        return
    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task(label, total=total)
        yield lambda item: progress.update(task, advance=1, description=f"{label} ({item})")


async def _source_events(inputs: Inputs, agents: list[str], settings: Settings) -> list[Event]:
    from engine.evaluation.messages import parse_timestamp

    since = None
    if inputs.since is not None:
        try:
            since = parse_timestamp(inputs.since)
        except ValueError as exc:
            raise ConfigurationError(f"--since: {exc}") from None
    import streams.store

    factory = getattr(streams.store, "PostgresMessageSource", None)
    if factory is None:
        raise ConfigurationError(
            "--run-id/--since need streams.store.PostgresMessageSource, which is not available yet"
        )
    source = factory(settings.database())
    async with contextlib.AsyncExitStack() as stack:
        if hasattr(source, "__aenter__"):
            source = await stack.enter_async_context(source)
        events: list[Event] = await source.events(agents or None, inputs.run_id, since)
        return events


async def _synthetic_events(inputs: Inputs, agents: list[str], settings: Settings, judge_spec: str) -> list[Event]:
    from engine.evaluation.synthetic import generate_conversation, make_generator
    from engine.personas import load_personas

    generator = make_generator(judge_spec, settings, os.environ)
    personas = load_personas(settings.propositions_dir)
    missing = [a for a in agents if a not in personas]
    if missing:
        raise ConfigurationError(f"--synthetic: no persona file for {', '.join(missing)}")
    cast = [personas[a] for a in agents] if agents else list(personas.values())
    count = inputs.synthetic or 0
    try:
        with progress_bar(count * len(cast), "writing messages") as advance:
            return list(await generate_conversation(generator, cast, count, progress=advance))
    finally:
        await generator.aclose()


async def load_input(inputs: Inputs, agents: list[str], settings: Settings, judge_spec: str) -> Loaded:
    """The conversation to evaluate and the agents to evaluate in it."""
    from engine.evaluation.harness import select_agents
    from engine.evaluation.hashing import events_hash
    from engine.evaluation.messages import read_messages

    inputs.check()
    if inputs.messages is not None:
        parsed = read_messages(inputs.messages, skip_invalid=inputs.skip_invalid)
        for issue in parsed.issues:
            print(f"drift: skipped {issue}", file=sys.stderr)
        events: list[Event] = list(parsed.events)
    elif inputs.synthetic is not None:
        events = await _synthetic_events(inputs, agents, settings, judge_spec)
    else:
        events = await _source_events(inputs, agents, settings)
    return Loaded(tuple(events), select_agents(events, agents), events_hash(events))


async def evaluate_input(
    inputs: Inputs, agents: list[str], options: HarnessOptions, settings: Settings, judge_spec: str,
    record: Path | None, meter: list[MeteredJudge] | None = None,
) -> tuple[str, Loaded, tuple[AgentResult, ...]]:  # fmt: skip
    """Build the judge, load the input, evaluate every agent; returns (judge name, input, results).
    ``meter``, when given, receives the metered judge (its calls and token usage)."""
    from engine.evaluation.harness import evaluate_cast
    from engine.judges.factory import make_judge
    from engine.judges.metered import MeteredJudge, close_judge

    spec = judge_spec or settings.effective_judge()
    judge = make_judge(spec, settings, record=record)
    metered = MeteredJudge(judge)
    (meter if meter is not None else []).append(metered)
    try:
        loaded = await load_input(inputs, agents, settings, spec)
        with progress_bar(len(loaded.agent_ids), "evaluating") as advance:
            results = await evaluate_cast(metered, loaded.events, loaded.agent_ids, options, advance)
    finally:
        await close_judge(judge)
    return judge.name, loaded, results
