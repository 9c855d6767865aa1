"""The framework-neutral half of every adapter: one gated turn, the step directives, the failure policy.

A :class:`GateSession` is shared by the gated agents of one conversation (an AutoGen team, a LangGraph graph):
it numbers the conversation's steps, remembers which speakers are gated (anyone else's message is published once
as a stimulus, so the judge sees what the agents answer to) and applies one :class:`GatePolicy` when the gate
cannot answer. The loop itself is :meth:`streams.client.GateClient.converse`; nothing here re-implements it.

Failure policy: a broker that cannot be reached or a verdict that does not come within
``GatePolicy.verdict_timeout_s`` never stops the framework's run. Fail-open (the default) lets the agent's
latest draft through, ungated; fail-closed keeps the agent silent for the turn. Either way one warning line is
logged (logger ``streams.adapters``) and the turn says what happened (:attr:`Turn.status`).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from aiokafka.errors import KafkaError
from pydantic import ValidationError

from engine.errors import DriftError, ServiceError
from engine.settings import Settings
from streams.client import GateClient
from streams.wire.payloads import Message, Verdict

log = logging.getLogger("streams.adapters")

#: The ``source`` / ``name`` the adapters give the messages they add to an agent's private context.
GATE_SOURCE = "drift_gate"

#: What became of a turn: the gate committed a text, the agent chose silence, the gate refused the draft, or the
#: gate could not answer (``ungated``: fail-open passed the latest draft; ``blocked``: fail-closed kept silence).
Status = Literal["committed", "skipped", "rejected", "ungated", "blocked"]

#: Asks the agent again with the gate's feedback; None means the agent chooses silence.
Regenerate = Callable[[str], Awaitable[str | None]]


@dataclass(frozen=True)
class GatePolicy:
    """How an adapter talks to the gate.

    ``on_failure``: ``"open"`` (default) lets the latest draft through ungated when the gate cannot answer,
    ``"closed"`` keeps the agent silent. ``verdict_timeout_s``: the longest wait for one verdict (each attempt).
    ``step_timeout_s``: the longest wait for a step's directives (advisory: on a timeout the turn goes on without
    them). ``connect_timeout_s``: the longest wait for the broker when :func:`gate_session` opens the client.
    ``directives``: ask the steps service before each turn. ``max_attempts``: a safety bound on one draft's
    attempts (the agent's gate configuration always decides first)."""

    on_failure: Literal["open", "closed"] = "open"
    verdict_timeout_s: float = 30.0
    step_timeout_s: float = 10.0
    connect_timeout_s: float = 10.0
    directives: bool = True
    max_attempts: int = 21  # 1 + the largest max_correction_attempts (20): the gate always decides first


@dataclass(frozen=True)
class Turn:
    """One agent's turn through the gate: ``text`` is what the conversation sees (None: the agent is silent)."""

    agent_id: str
    status: Status
    text: str | None
    attempts: int
    verdict: Verdict | None = None
    error: str | None = None

    def metadata(self) -> dict[str, str]:
        """Flat string labels for a framework message (AutoGen ``metadata``, LangChain ``response_metadata``)."""
        labels = {"drift_status": self.status, "drift_attempts": str(self.attempts)}
        if self.verdict is not None:
            labels |= {"drift_outcome": self.verdict.outcome, "drift_draft_id": self.verdict.draft_id}
            if self.verdict.judge:
                labels["drift_judge"] = self.verdict.judge
        return labels


def one_line(exc: BaseException) -> str:
    """An error as the one line a warning carries (its first line; the type when it has no text)."""
    if isinstance(exc, ValidationError):  # its first line only counts the errors: say the first one
        first = exc.errors()[0]
        return " ".join(filter(None, (".".join(map(str, first["loc"])), first["msg"])))
    text = str(exc).strip()
    return text.splitlines()[0] if text else ("timed out" if isinstance(exc, TimeoutError) else type(exc).__name__)


def render_directives(texts: Sequence[str]) -> str:
    """The directives of a step as one message to the agent."""
    return "Before you speak, the persona gate asks you to keep this in mind:\n" + "\n".join(f"- {t}" for t in texts)


@dataclass
class GateSession:
    """The gate as seen by the agents of one conversation (see the module docstring).

    ``gate``: a started :class:`GateClient`, or None when it could not be reached (every turn then follows the
    policy at once). ``run_id`` and ``channel`` go on every draft, step and stimulus: the judge reads the
    channel's trajectory of the run."""

    gate: GateClient | None
    run_id: str = field(default_factory=lambda: f"run-{uuid.uuid4().hex[:12]}")
    channel: str | None = None
    policy: GatePolicy = field(default_factory=GatePolicy)
    gated: set[str] = field(default_factory=set)
    step_no: int = 0
    _published: set[str] = field(default_factory=set)

    def register(self, *names: str) -> None:
        """Speakers whose messages reach the history through the gate (never re-published as stimuli)."""
        self.gated.update(names)

    async def directives(self, agent_id: str) -> list[str]:
        """Announce the next step with ``agent_id`` about to act; its directives' texts (none on a failure)."""
        if self.gate is None or not self.policy.directives:
            return []
        step, self.step_no = self.step_no, self.step_no + 1
        try:
            record = await self.gate.step(run_id=self.run_id, step=step, agent_ids=[agent_id], channel=self.channel,
                                          timeout_s=self.policy.step_timeout_s)  # fmt: skip
        except (ServiceError, KafkaError, OSError) as exc:
            log.warning("drift gate: no directives for %s (step %d): %s; the turn goes on without them",
                        agent_id, step, one_line(exc))  # fmt: skip
            return []
        return [d.text for d in record.directives if d.agent_id == agent_id and not d.timed_out]

    async def stimulus(self, *, message_id: str, source: str, text: str) -> None:
        """Publish a message of a speaker the gate does not see (a user, a tool) once, as a channel stimulus."""
        if self.gate is None or source in self.gated or message_id in self._published or not text:
            return
        self._published.add(message_id)
        try:  # a message the wire refuses (ids too long, a NUL in the text) is only not published
            message = Message(message_id=f"{self.run_id}.{message_id}", agent_id=f"{self.run_id}.{source}",
                              agent_name=source, text=text, kind="stimulus", source=source, run_id=self.run_id,
                              channel=self.channel)  # fmt: skip
            async with asyncio.timeout(self.policy.verdict_timeout_s):
                await self.gate.publish_message(message)
        except (TimeoutError, ValueError, DriftError, KafkaError, OSError) as exc:
            log.warning("drift gate: stimulus from %s not published: %s", source, one_line(exc))

    async def turn(
        self,
        *,
        agent_id: str,
        draft: str | None,
        regenerate: Regenerate,
        agent_name: str | None = None,
        persona: str | None = None,
    ) -> Turn:
        """Gate one draft: retries go back to ``regenerate`` with the feedback until the gate commits, refuses or
        the agent falls silent; a gate that cannot answer is handled by the policy (never raised)."""
        latest, attempts = draft, 1
        agent_errors: list[BaseException] = []

        async def again(feedback: str) -> str | None:
            nonlocal latest, attempts
            attempts += 1
            try:
                latest = await regenerate(feedback)
            except BaseException as exc:  # the agent's own failure is not the gate's: re-raised below
                agent_errors.append(exc)
                raise
            return latest

        fields: dict[str, Any] = {"run_id": self.run_id, "channel": self.channel, "agent_name": agent_name,
                                  "persona": persona, "timeout_s": self.policy.verdict_timeout_s}  # fmt: skip
        try:
            if self.gate is None:
                raise ServiceError("the gate client is not connected")
            if draft is None:
                verdict = await self.gate.skip(agent_id=agent_id, draft_id=uuid.uuid4().hex, **fields)
            else:
                verdict = await self.gate.converse(agent_id=agent_id, text=draft, regenerate=again,
                                                   max_attempts=self.policy.max_attempts, **fields)  # fmt: skip
        except (ServiceError, KafkaError, OSError) as exc:
            if exc in agent_errors:
                raise
            return self._failed(agent_id, latest, attempts, exc)
        return _settled(agent_id, verdict)

    def _failed(self, agent_id: str, latest: str | None, attempts: int, exc: BaseException) -> Turn:
        reason = one_line(exc)
        if self.policy.on_failure == "closed" or latest is None:
            log.warning("drift gate: %s: %s; fail-closed, the agent stays silent this turn", agent_id, reason)
            return Turn(agent_id, "blocked", None, attempts, error=reason)
        log.warning("drift gate: %s: %s; fail-open, the draft passes ungated", agent_id, reason)
        return Turn(agent_id, "ungated", latest, attempts, error=reason)


def _settled(agent_id: str, verdict: Verdict) -> Turn:
    if verdict.decision == "commit":
        return Turn(agent_id, "committed", verdict.text, verdict.attempt, verdict)
    status: Status = "skipped" if verdict.decision == "skip" else "rejected"
    return Turn(agent_id, status, None, verdict.attempt, verdict)


class _Unreachable(logging.Filter):
    """Drops aiokafka's "Unable connect to …" records while :func:`gate_session` connects."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Unable connect to")


@asynccontextmanager
async def gate_session(
    bootstrap: str | None = None,
    *,
    prefix: str | None = None,
    settings: Settings | None = None,
    run_id: str | None = None,
    channel: str | None = None,
    policy: GatePolicy | None = None,
) -> AsyncIterator[GateSession]:
    """Open a :class:`GateClient` (within ``policy.connect_timeout_s``) and yield a session on it. A broker that
    cannot be reached is not an error: one warning line, and the session follows the policy on every turn."""
    chosen = policy or GatePolicy()
    client: GateClient | None = GateClient(bootstrap, prefix=prefix, settings=settings,
                                           timeout_s=chosen.verdict_timeout_s)  # fmt: skip
    assert client is not None
    quiet = _Unreachable()  # aiokafka logs every refused attempt at ERROR: our one line below says it all
    logging.getLogger("aiokafka").addFilter(quiet)
    try:
        async with asyncio.timeout(chosen.connect_timeout_s):
            await client.start()
    except (TimeoutError, DriftError, KafkaError, OSError) as exc:
        await client.close()
        mode = "fail-open: drafts pass ungated" if chosen.on_failure == "open" else "fail-closed: agents stay silent"
        log.warning("drift gate: cannot connect to %s: %s; %s", client.settings.broker, one_line(exc), mode)
        client = None
    finally:
        logging.getLogger("aiokafka").removeFilter(quiet)
    session = GateSession(client, run_id=run_id or f"run-{uuid.uuid4().hex[:12]}", channel=channel, policy=chosen)
    try:
        yield session
    finally:
        if client is not None:
            await client.close()
