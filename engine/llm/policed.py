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
import logging
import random
import time

from engine.judges.llm import CallPolicy, PolicedClient
from engine.llm.base import Completion, CompletionRequest
from engine.models import TokenUsage

log = logging.getLogger(__name__)


class PolicedTextModel(PolicedClient):
    """A :class:`~engine.llm.base.TextModel` whose subclasses implement one provider call in :meth:`_send`."""

    def __init__(self, name: str, policy: CallPolicy, *, rng: random.Random | None = None) -> None:
        super().__init__(name, policy, rng=rng)
        self.calls = 0
        self.usage = TokenUsage()

    @abc.abstractmethod
    async def _send(self, request: CompletionRequest) -> tuple[str, TokenUsage]:
        """One provider call: the reply text and its usage."""

    async def complete(self, request: CompletionRequest) -> Completion:
        started = time.perf_counter()
        async with self._calls.bounded():
            text, usage = await self._calls.retrying(lambda: self._send(request), "text model")
        self.calls += 1
        self.usage = self.usage + usage
        return Completion(text, self._name, usage, (time.perf_counter() - started) * 1000.0)
