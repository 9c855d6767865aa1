"""The judge interface: one async call that scores claims 0–9, checks them true/false, or enumerates ideas.

A :class:`JudgeRequest` is semantic (claims, persona, trajectory, judged action); LLM judges render it into a
prompt with :func:`engine.prompts.build_prompt`, scripted and offline judges answer it directly. Every
:class:`JudgeResult` carries token usage and latency. Judges are small objects behind the :class:`Judge`
protocol so the core is tested with fakes and no network.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol, runtime_checkable

from engine.models import ZERO_USAGE, Event, Persona, TokenUsage

#: Batch mode judges at most this many claims of one target per call.
MAX_BATCH_CLAIMS = 10


class JudgeMode(StrEnum):
    SCORE = "score"  # integer 0-9 per claim
    CHECK = "check"  # true/false per claim
    ENUMERATE = "enumerate"  # list the distinct items (ideas) the claim asks for; value = count


@dataclass(frozen=True, slots=True)
class Claim:
    """A rendered claim (templates already filled) with the id of its proposition."""

    id: str
    text: str


@dataclass(frozen=True, slots=True)
class JudgeRequest:
    """Everything a judge needs to answer ``claims`` about one target.

    ``trajectory`` is already windowed (first_n / last_n applied); ``omitted`` counts the events left out
    between the first and the last part and is rendered as an omission marker after event ``first_part``.
    ``action`` is the judged draft for action-level checks (None for offline evaluation).
    ``share_history``: a hint, not content — other calls will follow with the same evidence up to the judged
    action (a draft's other dimensions, staged), so an LLM judge marks it for the provider's prompt cache.
    """

    mode: JudgeMode
    claims: tuple[Claim, ...]
    target_name: str
    agent_id: str | None = None
    persona: Persona | None = None
    trajectory: tuple[Event, ...] = ()
    first_part: int = 0
    omitted: int = 0
    action: str | None = None
    supplementary: str | None = None
    double_check: bool = False
    share_history: bool = False

    def judged_text(self) -> str:
        """The text a content rule (``message_contains``) is matched against."""
        if self.action is not None:
            return self.action
        return "\n".join(e.text for e in self.trajectory)


@dataclass(frozen=True, slots=True)
class ClaimAnswer:
    """A judge's answer for one claim. ``value`` is an int 0-9 (score), a bool (check) or a count (enumerate).

    ``first_value`` keeps the value before a double-check turn replaced it.
    """

    claim_id: str
    value: int | bool
    reasoning: str
    first_value: int | bool | None = None
    items: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class JudgeResult:
    answers: tuple[ClaimAnswer, ...]
    judge: str
    usage: TokenUsage = ZERO_USAGE
    latency_ms: float = 0.0
    calls: int = 1
    prompt_chars: int = 0
    cacheable_prefix_chars: int = 0

    def answer_for(self, claim_id: str) -> ClaimAnswer:
        for answer in self.answers:
            if answer.claim_id == claim_id:
                return answer
        raise KeyError(claim_id)


@runtime_checkable
class Judge(Protocol):
    """Anything that answers judge requests. ``name`` labels every output that used it."""

    @property
    def name(self) -> str: ...

    async def evaluate(self, request: JudgeRequest) -> JudgeResult: ...


@dataclass
class CallLog:
    """Counts calls per mode; judges that keep one let tests assert how many calls a path made."""

    calls: list[JudgeRequest] = field(default_factory=list)

    def record(self, request: JudgeRequest) -> None:
        self.calls.append(request)

    def count(self, mode: JudgeMode | None = None) -> int:
        return sum(1 for r in self.calls if mode is None or r.mode is mode)


async def score_claim(judge: Judge, request: JudgeRequest) -> ClaimAnswer:
    """Convenience: the single answer of a one-claim request."""
    result = await judge.evaluate(request)
    return result.answers[0]


def claims_in_batches(claims: Sequence[Claim], size: int = MAX_BATCH_CLAIMS) -> list[tuple[Claim, ...]]:
    """Split claims into batches of at most ``size`` (batch mode)."""
    return [tuple(claims[i : i + size]) for i in range(0, len(claims), size)]


class WrappedJudge:
    """Base of a judge that wraps another: same name, ``inner`` exposed; subclasses define ``evaluate``."""

    def __init__(self, inner: Judge) -> None:
        self._inner = inner

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def inner(self) -> Judge:
        return self._inner
