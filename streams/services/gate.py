"""The gate's streaming plumbing: one draft attempt in, a verdict, a correction log and (on commit) a message out.

Decisions are made by :mod:`engine.gate`; this module turns a :class:`~streams.wire.payloads.Draft` into the
scoring target, reads and writes the agent's recent messages and the draft's pending attempts (Faust tables
passed in as mappings), and sends the output records. Order of effects per attempt:
verdict → correction log → committed message, then table updates; the caller acks the draft afterwards.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NamedTuple, Protocol

import orjson

from engine.checks import TokenizedMessage, prepare
from engine.gate import (
    RECENT_FOR_SIMILARITY,
    AttemptResult,
    AttemptSummary,
    GateDecision,
    decide,
    pre_decision,
    run_checks,
)
from engine.judges.base import Judge
from engine.judges.budget import GATE_LANE
from engine.library import PropositionLibrary
from engine.models import AgentConfig, Decision, Event, Persona
from engine.scoring import ScoringTarget
from engine.settings import Settings
from engine.stepped_log import Held
from streams.runtime.eviction import unknown_earlier_attempts
from streams.runtime.history import HistoryView
from streams.runtime.output import all_delivered
from streams.services.candidates import Candidates
from streams.services.configs import ConfigCache
from streams.services.records import build_log, build_verdict, committed_message
from streams.services.stats import GateStats
from streams.wire.payloads import Draft
from streams.wire.topics import Topics

RECENT_KEPT = 10
#: After a worker starts, a draft that needs the judge waits at most this long (once) for the history feed to
#: replay ``messages``, so early drafts are not judged on a half-read conversation.
REPLAY_WAIT_S = 2.0


class CatchUp(Protocol):
    """The history feed's barrier (:meth:`streams.runtime.history.HistoryFeed.caught_up`)."""

    async def caught_up(self, timeout_s: float) -> bool: ...


class OutTopics(NamedTuple):
    """The gate's output topic names, resolved once (the hot path uses them for every draft)."""

    verdicts: str
    correction_logs: str
    messages: str


class Sender(Protocol):
    """Queues a record; the returned future resolves when the broker acknowledged it."""

    async def __call__(
        self, topic: str, key: bytes, value: bytes | None, partition: int | None = None
    ) -> asyncio.Future[Any]: ...


class TableWrites:
    """The gate's tables as written for one source record: every write lands in that record's partition (a
    :class:`streams.runtime.tables.DirectTable` bound with ``at``; plain mappings, in tests, as they are)."""

    def __init__(self, deps: GateDeps, partition: int | None) -> None:
        self.recent = _bound(deps.recent, partition)
        self.pending = _bound(deps.pending, partition)
        self.verdicts = _bound(deps.verdicts, partition)


def _bound(table: MutableMapping[str, Any], partition: int | None) -> MutableMapping[str, Any]:
    at = getattr(table, "at", None)
    return table if at is None else at(partition)


@dataclass
class GateDeps:
    settings: Settings
    judge: Judge
    library: PropositionLibrary
    configs: ConfigCache
    send: Sender
    recent: MutableMapping[str, Any]
    pending: MutableMapping[str, Any]
    stats: GateStats = field(default_factory=GateStats)
    #: the conversation as agents saw it (the worker's history view, shared with the steps service)
    view: HistoryView = field(default_factory=HistoryView)
    feed: CatchUp | None = None  # None: nothing feeds the view but this gate (tests)
    replayed: bool = False  # the feed has caught up once since the worker started
    verdicts: MutableMapping[str, Any] = field(default_factory=dict)  # draft id -> {attempt: its records}
    #: per-agent propositions trees and judges (an agent's ``propositions`` / ``judge`` keys); None: only ours
    candidates: Candidates | None = None
    _tokens: dict[str, TokenizedMessage] = field(default_factory=dict)

    async def flush_tables(
        self, keys: Iterable[str] | None = None, send: Sender | None = None
    ) -> list[asyncio.Future[Any]]:
        """Send the changelog records of the table writes to ``keys`` (all by default) and return their delivery
        futures (tables that queue them, see :class:`streams.runtime.tables.DirectTable`); plain mappings need
        nothing."""
        deliveries: list[asyncio.Future[Any]] = []
        for table in (self.recent, self.pending, self.verdicts):
            flush = getattr(table, "flush", None)
            if flush is not None:
                deliveries.extend(await flush(keys, send))
        return deliveries

    async def ship_verdicts(
        self, draft_ids: Iterable[str], send: Sender | None = None, ship: Callable[[], Awaitable[None]] | None = None
    ) -> list[asyncio.Future[Any]]:
        """Send the verdict records of ``draft_ids`` (with ``send``, then ``ship()`` when given: a lane batch
        gathers them into whole Kafka batches); the returned futures resolve once the broker has them. They go
        before the verdicts themselves, which wait for them: a verdict on the broker always has its record, so a
        redelivered attempt is re-emitted from it, never judged a second time (see :func:`process_draft`)."""
        flush = getattr(self.verdicts, "flush", None)
        if flush is None:
            return []
        delivered: list[asyncio.Future[Any]] = await flush(draft_ids, send or self.send)
        if ship is not None:
            await ship()
        return delivered

    def pick(self, config: AgentConfig) -> tuple[Judge, PropositionLibrary]:
        """The judge and library gating an agent with ``config``: the worker's, unless the configuration names
        its own (after ``drift shadow promote``)."""
        if self.candidates is None or (config.judge is None and config.propositions is None):
            return self.judge, self.library
        return self.candidates.pick(config, GATE_LANE)

    @functools.cached_property
    def topics(self) -> Topics:
        return Topics(self.settings.topic_prefix)

    @functools.cached_property
    def out_topics(self) -> OutTopics:
        return OutTopics(self.topics.verdicts, self.topics.correction_logs, self.topics.messages)

    def tokenized(self, text: str) -> TokenizedMessage:
        """Token cache for recent messages: each committed text is tokenised once."""
        cached = self._tokens.get(text)
        if cached is None:
            if len(self._tokens) > 50_000:
                self._tokens.clear()
            cached = self._tokens[text] = prepare(text)
        return cached


def _persona(library: PropositionLibrary, draft: Draft) -> Persona | None:
    persona = library.persona(draft.agent_id)
    if draft.persona:
        return Persona(id=draft.agent_id, name=draft.agent_name or draft.agent_id, personality=draft.persona)
    return persona


def conversation(deps: GateDeps, draft: Draft, recent: list[dict[str, Any]], name: str) -> Held[Event]:
    """The action-level trajectory: the draft's channel (or, for a direct message, the agent's direct events)
    as the agent saw it — other agents' messages and stimuli included — without the draft's own commit; a long
    channel's with the gap of the events the view has forgotten (the judge's window spans it).
    A worker whose view has nothing yet (just started) falls back to the agent's own recent commits."""
    if draft.channel is not None:
        held = deps.view.conversation(draft.run_id, draft.channel, exclude=draft.draft_id)
    else:
        held = Held(tuple(deps.view.trajectory(draft.run_id, None, (draft.agent_id,), exclude=draft.draft_id)))
    if held.items:
        return held
    return Held(tuple(Event(draft.agent_id, name, r["text"], channel=r.get("channel")) for r in recent))


def _target(deps: GateDeps, draft: Draft, recent: list[dict[str, Any]], persona: Persona | None) -> ScoringTarget:
    name = draft.agent_name or (persona.name if persona else draft.agent_id)
    held = conversation(deps, draft, recent, name)
    variables = {"agent_name": name, "action": draft.text}
    if draft.channel:
        variables["channel_name"] = draft.channel
    if draft.recipient:
        variables["recipient_name"] = draft.recipient
    return ScoringTarget(
        target_name=name,
        agent_id=draft.agent_id,
        persona=persona,
        events=held.items,
        gap=held.gap,
        action=draft.text,
        variables=variables,
        context={"agent_id": draft.agent_id},  # has_prior_actions counts this agent's actions only
    )


def committed_actions(history: list[dict[str, Any]]) -> int:
    """How many actions of the agent the gate has committed or seen: the ordinal ``n`` of the newest entry
    (entries written before ordinals existed count one each)."""
    return max((int(h.get("n", i + 1)) for i, h in enumerate(history)), default=0)


async def judge_attempt(deps: GateDeps, draft: Draft) -> tuple[AttemptResult, GateDecision]:
    config = deps.configs.get(draft.agent_id, draft.agent_name)
    judge, library = deps.pick(config)
    history = deps.recent.get(draft.agent_id) or []
    # a redelivered draft whose commit was already recorded must not count itself
    minimum = config.minimum_required_qty_of_actions
    prior = committed_actions([r for r in history if r.get("id") != draft.draft_id]) if minimum else 0
    early = pre_decision(skip=draft.skip, config=config, prior_actions=prior, attempt=draft.attempt, text=draft.text)
    if early is not None:
        return AttemptResult(attempt=draft.attempt, text=draft.text), early
    dims = config.enabled_gate_dimensions()
    if not dims:  # only the similarity window is needed (one more, in case the draft's own entry is there)
        history = history[-RECENT_FOR_SIMILARITY - 1 :]
    # a redelivered draft whose commit was already recorded must not be compared with itself
    recent = [r for r in history if r.get("id") != draft.draft_id]
    similar = config.gate_similarity_enabled
    if dims and deps.feed is not None and not deps.replayed:  # once per worker: the history replayed
        deps.replayed = await deps.feed.caught_up(min(deps.settings.judge_deadline_s, REPLAY_WAIT_S))
    # the conversation and the persona are only needed when a judge is asked
    target = (
        _target(deps, draft, recent, _persona(library, draft))
        if dims
        else ScoringTarget(draft.agent_id, action=draft.text)
    )
    result = await run_checks(
        judge,
        library.psets(draft.agent_id, dims, action=True),
        target,
        config,
        attempt=draft.attempt,
        recent=[deps.tokenized(r["text"]) for r in recent[-RECENT_FOR_SIMILARITY:]] if similar else [],
        deadline_s=deps.settings.judge_deadline_s,
        parallel=deps.settings.gate_parallel,
        share_prefix=deps.settings.gate_share_prefix,
        hopping=deps.settings.gate_window == "hopping",
        tokens=deps.tokenized(draft.text) if similar else None,  # cached: a commit joins the history
    )
    earlier = [AttemptSummary(**a) for a in deps.pending.get(draft.draft_id) or [] if a["attempt"] < draft.attempt]
    return result, decide(result, earlier, config)


def earlier_attempts_restoring(pending: MutableMapping[str, Any], partition: int | None) -> bool:
    """Is ``partition``'s ``pending-attempts`` tail still being read, behind Faust's recovery
    (:mod:`streams.runtime.restore`)? A later attempt of its drafts then waits for it (plain mappings: never)."""
    restoring = getattr(pending, "restoring", None)
    return restoring is not None and bool(restoring(partition))


async def earlier_attempts_restored(pending: MutableMapping[str, Any], partition: int | None) -> None:
    """Return once ``partition``'s earlier attempts are in memory (at once unless they are being restored)."""
    restored = getattr(pending, "restored", None)
    if restored is not None:
        await restored(partition)


VERDICTS_KEPT = 50_000


def remember_verdict(verdicts: MutableMapping[str, Any], draft: Draft, record: dict[str, Any]) -> None:
    """Keep this attempt's verdict record (the verdict and its timestamp: the correction log and the committed
    message follow from them and the draft) under its draft id.

    Records expire after ``DRIFT_PENDING_TTL_S`` (:mod:`streams.services.eviction`), and memory keeps at most
    :data:`VERDICTS_KEPT` draft ids: a redelivery replays offsets not yet committed, always among the newest."""
    attempts = dict(verdicts.get(draft.draft_id) or {})
    attempts[str(draft.attempt)] = record
    verdicts[draft.draft_id] = attempts
    store = getattr(verdicts, "local", verdicts)
    while len(store) > VERDICTS_KEPT:
        store.pop(next(iter(store)))


async def _emit(deps: GateDeps, draft: Draft, record: dict[str, Any], send: Sender) -> list[asyncio.Future[Any]]:
    """Send an attempt's records from its verdict record: verdict, correction log, (on commit) the message."""
    key, topics, verdict, now = draft.agent_id.encode(), deps.out_topics, record["verdict"], record["at"]
    deliveries = [
        await send(topics.verdicts, key, orjson.dumps(verdict)),
        await send(topics.correction_logs, key, orjson.dumps(build_log(draft, verdict, now))),
    ]
    if verdict["decision"] == "commit":
        message = committed_message(draft, verdict["text"], now)
        deliveries.append(await send(topics.messages, key, orjson.dumps(message)))
    return deliveries


def utcnow_iso() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def remember_commit(recent: MutableMapping[str, Any], agent_id: str, message_id: str, text: str,
                    channel: str | None) -> None:  # fmt: skip
    """Add a committed action to the agent's recent messages; ``n`` is its ordinal among the agent's actions
    (``minimum_required_qty_of_actions`` reads it), kept when the same message is recorded again."""
    known = recent.get(agent_id) or []
    again = next((h for h in known if h.get("id") == message_id), None)
    history = [h for h in known if h.get("id") != message_id]
    n = int(again["n"]) if again is not None and "n" in again else committed_actions(history) + 1
    history.append({"id": message_id, "text": text, "channel": channel, "n": n})
    recent[agent_id] = history[-RECENT_KEPT:]


async def process_draft(
    deps: GateDeps,
    draft: Draft,
    received: float,
    *,
    partition: int | None = None,
    flush: bool = True,
    send: Sender | None = None,
) -> list[asyncio.Future[Any]]:
    """Judge one attempt, send its records and update the tables. Returns the records' delivery futures.

    With ``flush=False`` the table writes stay queued: the caller flushes them for a whole batch (several
    commits of one agent then cost one changelog record) and waits for those deliveries too. ``send``
    replaces ``deps.send`` (a lane batch gathers its records, see :class:`streams.runtime.output.OutputBatch`).
    Table writes belong to ``partition``, the draft record's (its changelog partition).
    """
    send, tables = send or deps.send, TableWrites(deps, partition)
    known = (deps.verdicts.get(draft.draft_id) or {}).get(str(draft.attempt))
    if known is not None:  # a redelivered attempt: the first verdict again, never a second judgement
        return await _emit(deps, draft, known, send)
    if draft.attempt > 1:  # its earlier attempts may still be being restored (a restart, a rebalance)
        await earlier_attempts_restored(deps.pending, partition)
    unknown = unknown_earlier_attempts(deps.pending, draft) if draft.attempt > 1 else 0
    result, decision = await judge_attempt(deps, draft)
    latency_ms = (time.monotonic() - received) * 1000.0
    judge = deps.pick(deps.configs.get(draft.agent_id, draft.agent_name))[0]
    verdict = build_verdict(draft, result, decision, latency_ms, judge.name, unknown)
    record = {"verdict": verdict, "at": utcnow_iso()}
    if decision.decision is Decision.COMMIT:
        remember_commit(tables.recent, draft.agent_id, draft.draft_id, decision.text, draft.channel)
        name, ts = draft.agent_name or draft.agent_id, datetime.now(UTC)  # the message's ts is ``now`` too
        deps.view.record(
            draft.draft_id, draft.run_id, Event(draft.agent_id, name, decision.text, channel=draft.channel, ts=ts)
        )
    remember_verdict(tables.verdicts, draft, record)
    if flush:  # the record is durable before the verdict goes out (a lane batch does this for all its drafts)
        await all_delivered(await deps.ship_verdicts((draft.draft_id,)))
    deliveries = await _emit(deps, draft, record, send)
    if decision.decision is Decision.RETRY:
        attempts = [a for a in deps.pending.get(draft.draft_id) or [] if a["attempt"] != draft.attempt]
        attempts.append({"attempt": draft.attempt, "text": draft.text, "total_score": result.total_score})
        tables.pending[draft.draft_id] = attempts
    elif draft.attempt > 1 and draft.draft_id in deps.pending:
        del tables.pending[draft.draft_id]
    if flush:
        deliveries.extend(await deps.flush_tables((draft.agent_id, draft.draft_id), send))
    deps.stats.record(result, decision.outcome.value, draft.attempt, latency_ms)
    return deliveries
