"""The call policy shared by all LLM judges: deadline, concurrency cap, retries, one repair, double check.

A concrete judge only implements :meth:`LlmJudge._send`, which sends the rendered prompt plus any follow-up
turns and returns the reply text with its token usage. It raises :class:`TransientCallError` for failures
worth retrying (rate limits, overload, 5xx, connection errors) and :class:`~engine.errors.JudgeError` for
the rest. Everything else is decided here, once:

* at most ``policy.concurrency`` evaluations run at once;
* the whole evaluation (every retry, the repair and double-check turns) runs under one deadline, which starts
  once the evaluation holds its slot (time queued for a slot never burns it); passing it raises
  :class:`~engine.errors.JudgeTimeout`;
* a policy without a cap or a deadline (``None``) leaves them to the caller: a worker's
  :class:`engine.judges.budget.JudgeBudget` applies both to every judge it hosts, so each is applied once per
  call path and the judge only retries;
* transient failures are retried with jittered exponential backoff (honouring ``retry-after`` up to the
  backoff cap) at most ``max_attempts`` times per turn;
* an answer that fails strict parsing gets one repair turn (the bad reply goes back as the assistant turn,
  followed by :func:`engine.prompts.repair_turn`); a second failure raises
  :class:`~engine.errors.JudgeOutputError`. Each answering turn (first answer, double check) has its own
  single repair;
* ``double_check`` adds a turn with :func:`engine.prompts.double_check_turn`; its answers replace the first
  ones, which are kept as ``first_value``;
* usage is summed over every completed call; ``calls`` counts completed calls (failed attempts cost nothing).
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import logging
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal, TypeVar

from engine.errors import JudgeError, JudgeOutputError, JudgeTimeout
from engine.judges.base import ClaimAnswer, JudgeRequest, JudgeResult
from engine.judges.parsing import parse_answers
from engine.models import TokenUsage
from engine.prompts import Prompt, build_prompt, double_check_turn, repair_turn
from engine.retry import Backoff, RetryCounter, RetryPolicy, no_count, retrying

log = logging.getLogger(__name__)
T = TypeVar("T")

Role = Literal["user", "assistant"]
Turn = tuple[Role, str]


class TransientCallError(JudgeError):
    """A failure worth retrying; ``retry_after`` is the server's hint in seconds, if any."""

    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        self.reason = reason
        self.retry_after = retry_after
        super().__init__(reason)


@dataclass(frozen=True, slots=True)
class Reply:
    text: str
    usage: TokenUsage


@dataclass(frozen=True, slots=True)
class CallPolicy:
    """Deadline (seconds, whole evaluation), concurrency cap and retry schedule of an LLM judge or text model;
    a ``None`` deadline or cap is the caller's to apply."""

    deadline_s: float | None = 5.0
    concurrency: int | None = 64
    max_attempts: int = 6
    backoff_base_s: float = 0.05
    backoff_max_s: float = 1.0
    #: told of every retry (a worker counts them in ``drift_retries_total``)
    on_retry: RetryCounter = field(default=no_count, compare=False)

    def slots(self) -> contextlib.AbstractAsyncContextManager[object]:
        """What a call holds while it runs: a slot of a semaphore of ``concurrency``, or nothing when uncapped."""
        if self.concurrency is None:
            return contextlib.nullcontext()
        return asyncio.Semaphore(self.concurrency)


class PolicedCalls:
    """A call policy applied to one judge's or text model's calls: :meth:`bounded` holds a slot (when capped)
    and then the deadline; :meth:`retrying` retries transient failures with jittered exponential backoff.
    Shared by :class:`LlmJudge` and :class:`engine.llm.policed.PolicedTextModel`."""

    def __init__(self, name: str, policy: CallPolicy, rng: random.Random | None = None) -> None:
        self.name = name
        self.policy = policy
        self._slots = policy.slots()
        self._rng = rng or random.Random()

    @contextlib.asynccontextmanager
    async def bounded(self) -> AsyncIterator[None]:
        """One whole call (retries included): a slot, then the deadline (:class:`JudgeTimeout` past it)."""
        try:
            async with self._slots, asyncio.timeout(self.policy.deadline_s):
                yield
        except TimeoutError:
            raise JudgeTimeout(f"{self.name}: no answer within {self.policy.deadline_s:g} s") from None

    async def retrying(self, send: Callable[[], Awaitable[T]], what: str = "judge") -> T:
        """``send()``, retried on :class:`TransientCallError` at most ``policy.max_attempts`` times (the one retry
        policy, :mod:`engine.retry`: jittered exponential backoff honouring ``retry-after``); the deadline is
        :meth:`bounded`'s."""
        policy = RetryPolicy(
            what.replace(" ", "_"), lambda error: isinstance(error, TransientCallError),
            Backoff(self.policy.backoff_base_s, self.policy.backoff_max_s, self._rng), self.policy.max_attempts,
        )  # fmt: skip
        try:
            return await retrying(send, policy, self.policy.on_retry)
        except TransientCallError as error:
            attempts = self.policy.max_attempts
            raise JudgeError(f"{self.name}: gave up after {attempts} attempts: {error.reason}") from None


@dataclass
class _Tally:
    usage: TokenUsage = field(default_factory=TokenUsage)
    calls: int = 0


@dataclass(frozen=True, slots=True)
class _Answered:
    turns: tuple[Turn, ...]  # follow-up turns up to and including the valid reply
    answers: tuple[ClaimAnswer, ...]


class PolicedClient(abc.ABC):
    """Base of a provider client under a call policy (:class:`LlmJudge`, the text models of
    :mod:`engine.llm.policed`): its name, its policy applied by ``_calls``, an HTTP client to close."""

    def __init__(self, name: str, policy: CallPolicy, *, rng: random.Random | None = None) -> None:
        self._name = name
        self._policy = policy
        self._calls = PolicedCalls(name, policy, rng)

    @property
    def name(self) -> str:
        return self._name

    @property
    def policy(self) -> CallPolicy:
        return self._policy

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self._name!r}, deadline_s={self._policy.deadline_s})"

    @abc.abstractmethod
    async def aclose(self) -> None:
        """Release the HTTP client."""


class LlmJudge(PolicedClient):
    """Base class of the judges that ask a language model. Subclasses implement :meth:`_send`."""

    @abc.abstractmethod
    async def _send(self, prompt: Prompt, followups: Sequence[Turn]) -> Reply:
        """One model call: the prompt, then ``followups`` alternating assistant/user turns."""

    async def __aenter__(self) -> LlmJudge:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def evaluate(self, request: JudgeRequest) -> JudgeResult:
        prompt = build_prompt(request)
        tally = _Tally()
        started = time.perf_counter()
        async with self._calls.bounded():
            answers = await self._answer(request, prompt, tally)
        return JudgeResult(
            answers=answers,
            judge=self._name,
            usage=tally.usage,
            latency_ms=(time.perf_counter() - started) * 1000.0,
            calls=tally.calls,
            prompt_chars=len(prompt.full_text()),
            cacheable_prefix_chars=prompt.cacheable_chars(),
        )

    async def _answer(self, request: JudgeRequest, prompt: Prompt, tally: _Tally) -> tuple[ClaimAnswer, ...]:
        first = await self._ask_valid(request, prompt, (), tally)
        if not request.double_check:
            return first.answers
        turns = (*first.turns, ("user", double_check_turn()))
        second = await self._ask_valid(request, prompt, turns, tally)
        return tuple(
            replace(new, first_value=old.value) for new, old in zip(second.answers, first.answers, strict=True)
        )

    async def _ask_valid(
        self, request: JudgeRequest, prompt: Prompt, turns: tuple[Turn, ...], tally: _Tally
    ) -> _Answered:
        reply = await self._call(prompt, turns, tally)
        try:
            return _Answered((*turns, ("assistant", reply.text)), parse_answers(reply.text, request))
        except JudgeOutputError as error:
            log.warning("judge %s: unusable answer (%s); sending one repair turn", self._name, error)
            turns = (*turns, ("assistant", reply.text), ("user", repair_turn(str(error))))
        reply = await self._call(prompt, turns, tally)
        try:
            return _Answered((*turns, ("assistant", reply.text)), parse_answers(reply.text, request))
        except JudgeOutputError as error:
            raise JudgeOutputError(f"{self._name}: unusable answer after one repair turn: {error}") from None

    async def _call(self, prompt: Prompt, turns: Sequence[Turn], tally: _Tally) -> Reply:
        reply = await self._calls.retrying(lambda: self._send(prompt, turns))
        tally.calls += 1
        tally.usage = tally.usage + reply.usage
        return reply


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``retry-after`` header given in seconds (HTTP dates are ignored)."""
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if seconds >= 0 else None
