"""The report of one shadow: what the candidate decided beside the live gate on the same attempts, and its cost.

Built from the stored shadow verdicts alone (each row holds the candidate's verdict and a copy of the live one),
so it does not depend on how long correction logs are kept. The statistics are those of
:mod:`engine.shadow_report.agreement`; this module gathers them, the score differences per dimension, the attempts that
would flip and the cost of both sides into one :class:`ShadowReport`, which the renderers turn into text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from engine.models import ZERO_USAGE, TokenUsage
from engine.pricing import PriceTable
from engine.shadow_report.agreement import (
    LEVEL,
    RESAMPLES,
    Confusion,
    Interval,
    agreement,
    bootstrap_agreement,
    cohens_kappa,
    confusion,
    mean_difference,
    sent_back,
)

_TOKEN_KINDS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


@dataclass(frozen=True, slots=True)
class ShadowInfo:
    """A stored shadow (a row of ``shadows``): what it runs, on which agents, and its own meter."""

    name: str
    agents: str
    status: str
    sample: float
    judge: str | None = None
    propositions: str | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    budget_usd: float | None = None
    max_tokens: int | None = None
    spent_tokens: int = 0
    spent_usd: float = 0.0
    skipped: int = 0
    created_at: datetime | None = None
    stopped_at: datetime | None = None
    promoted_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class ComparedRow:
    """One stored shadow verdict, reduced to what the statistics need: decisions, the scores of the dimensions
    both judges answered (no timeout, no error), and the tokens of each side."""

    draft_id: str
    attempt: int
    live_decision: str
    decision: str
    live_scores: Mapping[str, float] = field(default_factory=dict)
    scores: Mapping[str, float] = field(default_factory=dict)
    live_usage: TokenUsage = ZERO_USAGE
    usage: TokenUsage = ZERO_USAGE

    @property
    def flips(self) -> bool:
        a, b = sent_back(self.live_decision), sent_back(self.decision)
        return a is not None and b is not None and a != b


@dataclass(frozen=True, slots=True)
class Flip:
    """An attempt the candidate decides the other way, with both judges' scores and reasoning per dimension
    (``dimensions[name]`` holds the stored entries: score, reasoning, and whatever else the gate wrote)."""

    draft_id: str
    attempt: int
    agent_id: str
    run_id: str | None
    text: str
    live_decision: str
    decision: str
    live_total: float | None
    total: float | None
    live_dimensions: Mapping[str, Mapping[str, Any]]
    dimensions: Mapping[str, Mapping[str, Any]]
    created_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class DimensionDiff:
    """Mean of shadow − live over the attempts both judges scored on ``dimension``, with its interval."""

    dimension: str
    n: int
    mean: float
    interval: Interval


@dataclass(frozen=True, slots=True)
class Cost:
    """One side's judge tokens over the report's attempts, in dollars when its judge has a price."""

    priced_as: str | None
    usage: TokenUsage
    usd: float | None
    attempts: int

    @property
    def tokens(self) -> int:
        return sum(self.usage.as_dict().values())

    @property
    def tokens_per_1000(self) -> float | None:
        return None if self.attempts == 0 else 1000 * self.tokens / self.attempts

    @property
    def usd_per_1000(self) -> float | None:
        return None if self.attempts == 0 or self.usd is None else 1000 * self.usd / self.attempts


@dataclass(frozen=True, slots=True)
class Method:
    """How the intervals were computed (printed with them, so a reader can reproduce them)."""

    resamples: int = RESAMPLES
    seed: int = 0
    level: float = LEVEL

    def describe(self) -> str:
        return (f"{self.level:.0%} percentile bootstrap intervals, {self.resamples:,} paired resamples of the "
                f"compared attempts, seed {self.seed}")  # fmt: skip


@dataclass(frozen=True, slots=True)
class ShadowReport:
    shadow: ShadowInfo
    since: datetime | None
    method: Method
    stored: int  # shadow verdicts in the window
    silent: int  # of which the agent chose silence on either side: nothing to gate, not compared
    table: Confusion
    agreement: float | None
    agreement_interval: Interval | None
    kappa: float | None
    kappa_interval: Interval | None
    dimensions: tuple[DimensionDiff, ...]
    flips: tuple[Flip, ...]
    live_cost: Cost
    shadow_cost: Cost

    @property
    def compared(self) -> int:
        return self.table.n

    @property
    def flips_omitted(self) -> int:
        """Flipping attempts counted in the table but not listed (the listing is capped)."""
        return self.table.flips - len(self.flips)


def flip_keys(rows: Sequence[ComparedRow]) -> list[tuple[str, int]]:
    """(draft id, attempt) of every attempt that would flip, in the rows' order."""
    return [(r.draft_id, r.attempt) for r in rows if r.flips]


def usage_of(stored: object) -> TokenUsage:
    """A stored token-usage object (jsonb) as :class:`TokenUsage`; anything unreadable counts as zero."""
    if not isinstance(stored, Mapping):
        return ZERO_USAGE
    counts = {k: stored.get(k) for k in _TOKEN_KINDS}
    return TokenUsage(**{k: int(v) if isinstance(v, int | float) and v > 0 else 0 for k, v in counts.items()})


def dimension_diffs(rows: Sequence[ComparedRow], method: Method) -> tuple[DimensionDiff, ...]:
    """Per dimension both judges scored, the mean score difference (shadow − live) and its interval."""
    pairs: dict[str, tuple[list[float], list[float]]] = {}
    for row in rows:
        if sent_back(row.live_decision) is None or sent_back(row.decision) is None:
            continue
        for name in sorted(row.live_scores.keys() & row.scores.keys()):
            live, shadow = pairs.setdefault(name, ([], []))
            live.append(row.live_scores[name])
            shadow.append(row.scores[name])
    diffs = []
    for name, (live, shadow) in sorted(pairs.items()):
        found = mean_difference(live, shadow, resamples=method.resamples, seed=method.seed, level=method.level)
        if found is not None:
            diffs.append(DimensionDiff(name, len(live), found[0], found[1]))
    return tuple(diffs)


def _cost(priced_as: str | None, usage: TokenUsage, attempts: int, prices: PriceTable) -> Cost:
    usd = None if priced_as is None else prices.cost(priced_as, usage)
    return Cost(priced_as, usage, usd, attempts)


def build_report(
    shadow: ShadowInfo,
    rows: Sequence[ComparedRow],
    flips: Sequence[Flip],
    *,
    live_judge: str | None,
    prices: PriceTable,
    since: datetime | None = None,
    method: Method = Method(),
) -> ShadowReport:
    """The report of ``shadow`` over ``rows`` (its stored verdicts in the window) with ``flips`` listed.

    The live side's tokens are priced as ``live_judge`` (unknown when ``None``); the candidate's as its own
    judge, or as the live one when the shadow keeps the live judge."""
    table = confusion((r.live_decision, r.decision) for r in rows)
    intervals = bootstrap_agreement(table, resamples=method.resamples, seed=method.seed, level=method.level)
    live_usage = sum((r.live_usage for r in rows), ZERO_USAGE)
    shadow_usage = sum((r.usage for r in rows), ZERO_USAGE)
    return ShadowReport(
        shadow=shadow, since=since, method=method, stored=len(rows), silent=len(rows) - table.n, table=table,
        agreement=agreement(table), agreement_interval=intervals[0],
        kappa=cohens_kappa(table), kappa_interval=intervals[1],
        dimensions=dimension_diffs(rows, method), flips=tuple(flips),
        live_cost=_cost(live_judge, live_usage, len(rows), prices),
        shadow_cost=_cost(shadow.judge or live_judge, shadow_usage, len(rows), prices),
    )  # fmt: skip
