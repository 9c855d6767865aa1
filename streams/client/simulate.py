"""The session runner: simulations as an orchestrator of the service (client side).

One session (a group, a theme, a repetition, one arm) runs TinyTroupe's step model through the service:

1. the arm's configuration is published for every agent of the session (``agent-config``); agent ids are
   session-scoped (``<run_id>.<persona id>``), so each (agent, session) has its own configuration, history
   and scores, and sessions never see each other's messages;
2. the facilitator's introduction is published to ``messages`` (a broadcast stimulus), then every step
   publishes a ``steps`` record and awaits its ``directives`` (interventions are evaluated once per step,
   before the agents act); each acting agent gets its directives as a nudge;
3. agents act in parallel (each sees the conversation as it stood when the step began) or one by one in a
   seeded random order (``sequential_random``); every message is sent to ``drafts`` and the verdicts are
   followed: ``retry`` → the actor rewrites with the feedback; ``commit`` (including ``forced_through``, whose
   text is the best attempt's) → the text joins the conversation; ``reject`` → nothing is said; an actor that
   chooses silence sends a draft marked ``skip`` (the gate logs it and commits nothing);
4. after the mission prompt and its steps, the rapporteur is asked to consolidate (a stimulus and one more
   step), and the extractor turns the consolidation into a list (ideas or opinions).

The gate publishes committed messages to ``messages``; the runner publishes only stimuli. The worker's sinks
store both in ``runs``/``run_messages``; :mod:`streams.client.transcripts` writes a session as the evaluation
harness's conversation JSONL. :class:`SessionResult` holds the per-(agent, session) outcome and the time spent waiting
for actors, verdicts and directives, so the orchestration overhead can be measured.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from engine.actors.base import Actor, ActRequest
from engine.errors import ConfigurationError, DriftError
from engine.llm.base import CompletionRequest, TextModel
from engine.models import AgentConfig, Event, EventKind, Persona
from engine.propositions.models import check_id
from engine.simulation.plan import SessionPlan
from engine.simulation.population import parse_json_object
from engine.simulation.scenario import Scenario, render_prompt
from streams.wire.payloads import MAX_ID_CHARS, Directives, Message, Verdict


class Service(Protocol):
    """What the runner needs from the service (:class:`streams.client.GateClient` provides it)."""

    async def step(self, *, run_id: str, step: int, agent_ids: list[str], channel: str | None = None) -> Directives: ...

    async def check(self, *, agent_id: str, text: str, **fields: Any) -> Verdict: ...

    async def publish_message(self, message: Message) -> None: ...

    async def publish_config(self, agent_id: str, config: dict[str, Any]) -> None: ...


@dataclass
class AgentResult:
    agent_id: str
    persona_id: str
    name: str
    actions: int = 0
    drafts: int = 0
    retries: int = 0
    silences: int = 0
    nudges: Counter[str] = field(default_factory=Counter)
    outcomes: Counter[str] = field(default_factory=Counter)


@dataclass
class SessionResult:
    run_id: str
    key: str
    arm: str
    theme: str
    agents: dict[str, AgentResult]
    events: list[Event] = field(default_factory=list)
    steps: int = 0
    directives: Counter[str] = field(default_factory=Counter)
    extracted: list[Any] | None = None
    judges: set[str] = field(default_factory=set)
    error: str | None = None
    wall_s: float = 0.0
    actor_s: float = 0.0
    verdict_wait_s: float = 0.0
    judge_s: float = 0.0
    step_wait_s: float = 0.0
    #: per step, the slowest turn's actor + judge time (parallel) or every turn's (sequential): the time the
    #: session could not have saved with a faster service
    critical_s: float = 0.0
    turns: int = 0
    verdict_latencies_ms: list[float] = field(default_factory=list)

    @property
    def overhead_s(self) -> float:
        """Wall time beyond the actors' and judges' critical path: orchestration, transport, step round trips."""
        return max(self.wall_s - self.critical_s, 0.0)


OnEvent = Callable[[SessionResult, str, str], None]
#: Called as each session finishes (an experiment stores it at once, so a killed run resumes from there).
OnSession = Callable[[SessionResult], Awaitable[None]]
#: Called once the rapporteur's step is under way (its actor is asked): the conversation is then final but for
#: the consolidation, so work that only needs the rest of it (an experiment's scoring evidence) overlaps the call.
OnConsolidating = Callable[[SessionResult], Awaitable[None]]
ARMS = ("treatment", "control")


@dataclass
class Simulation:
    """Everything sessions share: the scenario, personas, actor, extractor and the service."""

    scenario: Scenario
    personas: dict[str, Persona]
    actor: Actor
    extractor: TextModel
    service: Service
    run_prefix: str
    on_event: OnEvent = lambda _session, _kind, _line: None
    extraction_timeout_s: float = 120.0
    on_session: OnSession | None = None
    on_consolidating: OnConsolidating | None = None
    _rendered: dict[str, str] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        try:
            check_id(self.run_prefix, "run id")
        except ValueError as exc:
            raise ConfigurationError(str(exc)) from None

    def rendered(self, persona_id: str) -> str:
        """The persona as the judge sees it, rendered once per simulation."""
        text = self._rendered.get(persona_id)
        if text is None:
            text = self._rendered[persona_id] = self.personas[persona_id].render()
        return text

    def config(self, arm: str) -> AgentConfig:
        return getattr(self.scenario.arms, arm).config()  # type: ignore[no-any-return]

    async def run_sessions(self, plans: Sequence[SessionPlan], arm: str, concurrency: int = 8) -> list[SessionResult]:
        """Run ``plans`` in one arm, at most ``concurrency`` at a time; results in plan order. Every session's
        configuration is published before the first session starts, so workers hold it well before any draft."""
        sessions = [_Session(self, plan, arm) for plan in plans]
        for session in sessions:
            await session.configure()
        return await self._gather(sessions, asyncio.Semaphore(concurrency))

    async def run_arms(
        self, plans: Sequence[SessionPlan], concurrency: int = 8, arms: Sequence[str] = ARMS
    ) -> dict[str, list[SessionResult]]:
        """The same plans in every arm (identical agents and schedules), all sessions sharing ``concurrency``
        slots; results by arm, each in plan order (session keys pair them across arms)."""
        by_arm = {arm: [_Session(self, plan, arm) for plan in plans] for arm in arms}
        for sessions in by_arm.values():
            for session in sessions:
                await session.configure()
        slots = asyncio.Semaphore(concurrency)
        results = await asyncio.gather(*(self._gather(sessions, slots) for sessions in by_arm.values()))
        return dict(zip(by_arm, results, strict=True))

    async def _gather(self, sessions: Sequence[_Session], slots: asyncio.Semaphore) -> list[SessionResult]:
        async def one(session: _Session) -> SessionResult:
            async with slots:
                result = await self._run(session, configure=False)
            if self.on_session is not None:
                await self.on_session(result)
            return result

        return list(await asyncio.gather(*(one(s) for s in sessions)))

    async def run_session(self, plan: SessionPlan, arm: str, *, configure: bool = True) -> SessionResult:
        """One session; ``configure=False`` when :meth:`configure` already published its agents' configuration."""
        return await self._run(_Session(self, plan, arm), configure=configure)

    async def configure(self, plan: SessionPlan, arm: str) -> None:
        """Publish the arm's configuration for every agent of the session (all at once; returns when acked)."""
        await _Session(self, plan, arm).configure()

    async def _run(self, session: _Session, *, configure: bool) -> SessionResult:
        started = time.perf_counter()
        try:
            if configure:
                await session.configure()
            await session.run()
        except (DriftError, TimeoutError) as exc:
            session.result.error = f"{type(exc).__name__}: {exc}"
            self.on_event(session.result, "error", session.result.error)
        session.result.wall_s = time.perf_counter() - started
        return session.result


class _Session:
    def __init__(self, sim: Simulation, plan: SessionPlan, arm: str) -> None:
        self.sim, self.plan, self.arm = sim, plan, arm
        self.scenario = sim.scenario
        self.run_id = f"{sim.run_prefix}.{arm}.{plan.key}"
        self.channel = self.scenario.channel
        agents = {
            f"{self.run_id}.{p}": AgentResult(f"{self.run_id}.{p}", p, sim.personas[p].name) for p in plan.agent_ids
        }
        longest = max([*agents, f"{self.run_id}.facilitator"], key=len)
        if len(longest) > MAX_ID_CHARS:
            raise ConfigurationError(
                f"agent id {longest!r} is longer than {MAX_ID_CHARS} characters: use a shorter --run-id"
            )
        self.result = SessionResult(self.run_id, plan.key, arm, plan.theme.id, agents)
        self.step_no = 0
        self.rng = random.Random(plan.seed)
        self.busy: dict[str, float] = {}  # actor + judge seconds of each agent's turn in the current step

    @property
    def agent_ids(self) -> list[str]:
        return list(self.result.agents)

    def persona(self, agent_id: str) -> Persona:
        return self.sim.personas[self.result.agents[agent_id].persona_id]

    def persona_text(self, agent_id: str) -> str:
        return self.sim.rendered(self.result.agents[agent_id].persona_id)

    async def configure(self) -> None:
        config = self.sim.config(self.arm).model_dump()
        await asyncio.gather(*(self.sim.service.publish_config(agent_id, config) for agent_id in self.agent_ids))

    async def run(self) -> None:
        names = [self.persona(a).name for a in self.agent_ids]
        facilitator = self.scenario.facilitator
        phases = (
            (facilitator.introduction, self.scenario.steps.introduction),
            (facilitator.mission, self.scenario.steps.mission),
        )
        for template, steps in phases:
            if steps:
                await self.broadcast(render_prompt(template, theme=self.plan.theme.text, participants=names))
            for _ in range(steps):
                await self.step(self.agent_ids)
        await self.consolidate()

    async def publish(self, message: Message) -> None:
        await self.sim.service.publish_message(message)
        name = message.agent_name or message.agent_id
        event = Event(
            message.agent_id, name, message.text, EventKind(message.kind), message.channel, message.source, message.ts
        )
        self.result.events.append(event)

    async def broadcast(self, text: str) -> None:
        name = self.scenario.facilitator.name
        await self.publish(
            Message(message_id=f"{self.run_id}.stimulus.{self.step_no}", agent_id=f"{self.run_id}.facilitator",
                    agent_name=name, text=text, kind="stimulus", run_id=self.run_id, channel=self.channel)
        )  # fmt: skip
        self.sim.on_event(self.result, "stimulus", f"{name}: {text}")

    async def step(
        self, acting: list[str], stimulus: str | None = None, alongside: OnConsolidating | None = None
    ) -> dict[str, str]:
        """Announce the step, take its directives as nudges, let ``acting`` act (``alongside`` runs while they
        do); returns who committed what."""
        nudges = await self.directives(acting)
        side = asyncio.ensure_future(alongside(self.result)) if alongside is not None else None
        try:
            return await self.turns(acting, nudges, stimulus)
        finally:
            if side is not None:
                await side

    async def turns(self, acting: list[str], nudges: dict[str, str], stimulus: str | None) -> dict[str, str]:
        self.busy = dict.fromkeys(acting, 0.0)
        said: dict[str, str] = {}
        if self.scenario.agent_order == "parallel":
            seen = tuple(self.result.events)
            texts = await asyncio.gather(*(self.act(a, seen, nudges.get(a), stimulus) for a in acting))
            said = {a: t for a, t in zip(acting, texts, strict=True) if t is not None}
            self.result.critical_s += max(self.busy.values(), default=0.0)
        else:
            for agent_id in self.rng.sample(acting, len(acting)):
                text = await self.act(agent_id, tuple(self.result.events), nudges.get(agent_id), stimulus)
                if text is not None:
                    said[agent_id] = text
            self.result.critical_s += sum(self.busy.values())
        self.result.turns += len(acting)
        return said

    async def directives(self, acting: list[str]) -> dict[str, str]:
        waited = time.perf_counter()
        record = await self.sim.service.step(
            run_id=self.run_id, step=self.step_no, agent_ids=acting, channel=self.channel
        )
        self.result.step_wait_s += time.perf_counter() - waited
        self.result.steps += 1
        self.step_no += 1
        nudges: dict[str, list[str]] = {}
        for d in record.directives:
            self.result.directives[str(d.kind)] += 1
            if not d.timed_out and d.agent_id in self.result.agents:
                nudges.setdefault(d.agent_id, []).append(d.text)
                self.result.agents[d.agent_id].nudges[str(d.kind)] += 1
                self.sim.on_event(self.result, "directive", f"{d.kind} → {self.result.agents[d.agent_id].name}")
        return {agent_id: "\n".join(texts) for agent_id, texts in nudges.items()}

    async def act(self, agent_id: str, seen: tuple[Event, ...], nudge: str | None, stimulus: str | None) -> str | None:
        """One agent's turn: act, draft, follow the verdicts. Returns the committed text, None when nothing was."""
        agent, persona = self.result.agents[agent_id], self.persona(agent_id)
        draft_id, feedback, attempt = f"{self.run_id}.s{self.step_no - 1}.{agent.persona_id}", None, 1
        while True:
            acted = await self.sim.actor.act(
                ActRequest(agent_id, persona, seen, stimulus, nudge, feedback, attempt, self.channel)
            )
            self.result.actor_s += acted.latency_ms / 1000.0
            self.busy[agent_id] = self.busy.get(agent_id, 0.0) + acted.latency_ms / 1000.0
            if acted.text is None:
                await self.silence(agent, draft_id, attempt)
                return None
            verdict = await self.draft(agent, draft_id, attempt, acted.text)
            if verdict.decision != "retry":
                break
            agent.retries += 1
            self.sim.on_event(self.result, "retry", f"{agent.name} (attempt {attempt}): {acted.text}")
            feedback, attempt = verdict.feedback or "", attempt + 1
        agent.outcomes[str(verdict.outcome)] += 1  # the plain value: an enum key prints as its repr
        if verdict.decision == "reject":
            self.sim.on_event(self.result, "rejected", f"{agent.name}: {acted.text}")
            return None
        agent.actions += 1
        self.result.events.append(Event(agent_id, agent.name, verdict.text, EventKind.ACTION, self.channel))
        self.sim.on_event(self.result, verdict.outcome, f"{agent.name}: {verdict.text}")
        return verdict.text

    async def silence(self, agent: AgentResult, draft_id: str, attempt: int) -> None:
        """The agent chose silence: the draft says so (``skip``), so the gate logs the choice and commits nothing."""
        agent.silences += 1
        await self.sim.service.check(
            agent_id=agent.agent_id, text="", draft_id=draft_id, attempt=attempt, run_id=self.run_id,
            channel=self.channel, agent_name=agent.name, skip=True,
        )  # fmt: skip
        self.sim.on_event(self.result, "silence", f"{agent.name} says nothing")

    async def draft(self, agent: AgentResult, draft_id: str, attempt: int, text: str) -> Verdict:
        agent.drafts += 1
        waited = time.perf_counter()
        verdict = await self.sim.service.check(
            agent_id=agent.agent_id, text=text, draft_id=draft_id, attempt=attempt, run_id=self.run_id,
            channel=self.channel, agent_name=agent.name, persona=self.persona_text(agent.agent_id),
        )  # fmt: skip
        self.result.verdict_wait_s += time.perf_counter() - waited
        if verdict.judge:
            self.result.judges.add(verdict.judge)
        self.result.verdict_latencies_ms.append(verdict.latency_ms)
        judged = verdict.latency_ms / 1000.0 if verdict.scores else 0.0
        self.result.judge_s += judged
        self.busy[agent.agent_id] = self.busy.get(agent.agent_id, 0.0) + judged
        return verdict

    async def consolidate(self) -> None:
        rapporteur = self.agent_ids[0]
        prompt = render_prompt(self.scenario.rapporteur.prompt, theme=self.plan.theme.text, participants=[])
        await self.publish(
            Message(message_id=f"{self.run_id}.rapporteur", agent_id=rapporteur, text=prompt, kind="stimulus",
                    agent_name=self.persona(rapporteur).name, source=self.scenario.facilitator.name,
                    run_id=self.run_id, channel=self.channel)
        )  # fmt: skip
        said = await self.step([rapporteur], stimulus=prompt, alongside=self.sim.on_consolidating)
        if rapporteur in said:
            self.result.extracted = await self.extract(said[rapporteur])

    async def extract(self, text: str) -> list[Any] | None:
        extraction = self.scenario.extraction
        instructions = render_prompt(
            extraction.prompt, items=extraction.items, theme=self.plan.theme.text, participants=[]
        )
        prompt = (f"{instructions}\nEach object has the keys: {', '.join(extraction.fields)}. Answer with "
                  f'{{"{extraction.items}": [...]}} only.\n<text>\n{text}\n</text>')  # fmt: skip
        try:
            async with asyncio.timeout(self.sim.extraction_timeout_s):
                reply = await self.sim.extractor.complete(CompletionRequest.single(prompt, purpose="extraction"))
            items = _items(reply.text, extraction.items)
        except (DriftError, TimeoutError, ValueError) as exc:
            self.sim.on_event(self.result, "error", f"extraction failed: {exc}")
            return None
        self.sim.on_event(self.result, "extracted", f"{len(items)} {extraction.items}")
        return items


def _items(reply: str, key: str) -> list[Any]:
    stripped = reply.strip()
    value = json.loads(stripped) if stripped.startswith("[") else parse_json_object(stripped).get(key)
    if not isinstance(value, list):
        raise ValueError(f"the extraction holds no '{key}' list")
    return value
