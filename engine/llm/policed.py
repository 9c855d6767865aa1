"""The judges' call policy applied to free-text models: one deadline, a concurrency cap, retries, usage.

:class:`PolicedTextModel` is the base of the provider text models (:mod:`engine.llm.anthropic`,
:mod:`engine.llm.openai_compat`). It reuses :class:`engine.judges.llm.CallPolicy` and its failure classes, so
an actor or a population generator behaves like a judge under provider faults: the whole completion (every
retry; the deadline starts once the completion holds a slot) runs under ``policy.deadline_s``
(:class:`~engine.errors.JudgeTimeout` past it);
:class:`~engine.judges.llm.TransientCallError` (429, 5xx, overload, connection errors, malformed bodies) is
retried with jittered exponential backoff honouring ``retry-after``; other failures raise
:class:`~engine.errors.JudgeError` at once. ``calls`` and ``usage`` count completed calls only.
"""

from __future__ import annotations

import abc
import asyncio
import logging
import random
import time

from engine.errors import JudgeError, JudgeTimeout
from engine.judges.llm import CallPolicy, TransientCallError
from engine.llm.base import Completion, CompletionRequest
from engine.models import TokenUsage

log = logging.getLogger(__name__)


class PolicedTextModel(abc.ABC):
    """A :class:`~engine.llm.base.TextModel` whose subclasses implement one provider call in :meth:`_send`."""

    def __init__(self, name: str, policy: CallPolicy, *, rng: random.Random | None = None) -> None:
        self._name = name
        self._policy = policy
        self._slots = policy.slots()
        self._rng = rng or random.Random()
        self.calls = 0
        self.usage = TokenUsage()

    @property
    def name(self) -> str:
        return self._name

    @property
    def policy(self) -> CallPolicy:
        return self._policy

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self._name!r}, deadline_s={self._policy.deadline_s})"

    @abc.abstractmethod
    async def _send(self, request: CompletionRequest) -> tuple[str, TokenUsage]:
        """One provider call: the reply text and its usage."""

    @abc.abstractmethod
    async def aclose(self) -> None:
        """Release the HTTP client."""

    async def complete(self, request: CompletionRequest) -> Completion:
        started = time.perf_counter()
        try:
            async with self._slots, asyncio.timeout(self._policy.deadline_s):
                text, usage = await self._with_retries(request)
        except TimeoutError:
            raise JudgeTimeout(f"{self._name}: no answer within {self._policy.deadline_s:g} s") from None
        return Completion(text, self._name, usage, (time.perf_counter() - started) * 1000.0)

    async def _with_retries(self, request: CompletionRequest) -> tuple[str, TokenUsage]:
        attempt = 1
        while True:
            try:
                text, usage = await self._send(request)
            except TransientCallError as error:
                if attempt >= self._policy.max_attempts:
                    raise JudgeError(f"{self._name}: gave up after {attempt} attempts: {error.reason}") from None
                delay = self._backoff(attempt, error.retry_after)
                log.info("text model %s: %s; retry %d in %.3f s", self._name, error.reason, attempt, delay)
                await asyncio.sleep(delay)
                attempt += 1
                continue
            self.calls += 1
            self.usage = self.usage + usage
            return text, usage

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        ceiling = min(self._policy.backoff_max_s, self._policy.backoff_base_s * 2 ** (attempt - 1))
        delay = self._rng.uniform(ceiling / 2, ceiling)
        if retry_after is not None:
            delay = max(delay, min(retry_after, self._policy.backoff_max_s))
        return delay
