"""Gate statistics for ``/stats``, ``/metrics`` and ``drift stats``. Counts and scores only: no message text."""

from __future__ import annotations

import statistics
from collections import Counter, deque
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

import prometheus_client
from prometheus_client import Histogram

from engine.gate import AttemptResult
from engine.judges.base import Judge, JudgeRequest, JudgeResult
from engine.models import ZERO_USAGE, TokenUsage

LATENCY_WINDOW = 10_000

#: Histogram buckets (seconds) of verdict and judge latency: a local judge answers in milliseconds, an LLM in
#: seconds, and the judge deadline is a few seconds.
LATENCY_BUCKETS_S = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
#: Outcomes of an attempt whose checks failed (TinyTroupe: a failed regeneration when the attempt is > 1).
FAILED_OUTCOMES = frozenset({"corrected", "forced_through", "rejected"})
#: Outcomes of an attempt the gate did not judge: the agent chose silence, or it is below the minimum of actions.
UNJUDGED_OUTCOMES = frozenset({"skipped", "not_gated_yet"})


def percentiles(values: Collection[float], qs: tuple[int, ...]) -> dict[str, float | None]:
    """``{"p50": …}`` for each whole percentile in ``qs``, interpolated linearly between the closest ranks as
    numpy's default does (the standard library's "inclusive" quantiles; no numpy here: the collector that reports
    them is registered, and so called, in every worker's start)."""
    if len(values) < 2:
        only = next(iter(values), None)
        return {f"p{q}": only for q in qs}
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return {f"p{q}": cuts[q - 1] for q in qs}


@dataclass
class Moments:
    """Count, mean and population sd of a stream of values (for failed scores, per dimension)."""

    n: int = 0
    total: float = 0.0
    squares: float = 0.0

    def add(self, value: float) -> None:
        self.n, self.total, self.squares = self.n + 1, self.total + value, self.squares + value * value

    def summary(self) -> dict[str, float | int]:
        mean = self.total / self.n
        return {"n": self.n, "mean": mean, "sd": max(self.squares / self.n - mean * mean, 0.0) ** 0.5}


class RetryCounts:
    """``drift_retries_total{operation}``: every retry of the one retry policy (:mod:`engine.retry`) in this
    process, by operation; a :class:`engine.retry.RetryCounter` (call it with the operation's name)."""

    def __init__(self) -> None:
        self.counter = prometheus_client.Counter(
            "drift_retries", "Retries (not first attempts) by operation.", ["operation"], registry=None
        )

    def __call__(self, operation: str) -> None:
        self.counter.labels(operation=operation).inc()

    def value(self, operation: str) -> float:
        """The retries of ``operation`` so far."""
        samples = (s for m in self.counter.collect() for s in m.samples if s.name == "drift_retries_total")
        return next((s.value for s in samples if s.labels.get("operation") == operation), 0.0)


@dataclass
class GateStats:
    """Running totals of one worker (TinyTroupe's ActionGenerator statistics plus service metrics)."""

    attempts: int = 0
    drafts_first_attempt: int = 0
    first_attempts_judged: int = 0
    first_attempt_passed: int = 0
    regenerations: int = 0
    failed_regenerations: int = 0
    failed_scores: dict[str, Moments] = field(default_factory=dict)
    outcomes: Counter[str] = field(default_factory=Counter)
    dimension_failures: Counter[str] = field(default_factory=Counter)
    dimension_timeouts: Counter[str] = field(default_factory=Counter)
    score_sums: Counter[str] = field(default_factory=Counter)
    score_counts: Counter[str] = field(default_factory=Counter)
    similarity_checks: int = 0
    similarity_failures: int = 0
    judge_calls: int = 0
    usage: TokenUsage = ZERO_USAGE
    dead_letters: int = 0
    #: what the worker holds, by :mod:`streams.services.eviction`: values measured as they change
    #: (table_restore_seconds, sink_lag_records by sink) and probes read at snapshot time (agents_in_memory,
    #: pending_attempts)
    state: dict[str, Any] = field(default_factory=dict)
    probes: dict[str, Callable[[], Any]] = field(default_factory=dict)
    latencies_ms: deque[float] = field(default_factory=lambda: deque(maxlen=LATENCY_WINDOW))
    #: per-worker histograms (not in prometheus_client's global registry: several workers share a process in tests)
    verdict_latency: Histogram = field(
        default_factory=lambda: Histogram(
            "drift_verdict_latency_seconds", "Draft arrival to verdict sent.", buckets=LATENCY_BUCKETS_S, registry=None
        )
    )
    retries: RetryCounts = field(default_factory=RetryCounts)
    judge_latency: Histogram = field(
        default_factory=lambda: Histogram(
            "drift_judge_latency_seconds", "One judge call (every caller).", buckets=LATENCY_BUCKETS_S, registry=None
        )
    )

    def record(self, result: AttemptResult, outcome: str, attempt: int, latency_ms: float) -> None:
        self.attempts += 1
        self.outcomes[outcome] += 1
        judged = outcome not in UNJUDGED_OUTCOMES
        if attempt == 1:
            self.drafts_first_attempt += 1
            self.first_attempts_judged += judged
            self.first_attempt_passed += outcome in {"passed", "timeout_pass_through"}
        elif judged:
            self._regeneration(result, failed=outcome in FAILED_OUTCOMES)
        for check in result.checks:
            name = check.dimension.value
            if check.timed_out:
                self.dimension_timeouts[name] += 1
                continue
            self.score_sums[name] += check.score  # type: ignore[assignment]
            self.score_counts[name] += 1
            self.dimension_failures[name] += not check.passed
        if result.similarity is not None:
            self.similarity_checks += 1
            self.similarity_failures += not result.similarity.passed
        if result.checks:  # an algorithmic-only attempt used no judge and no tokens
            self.judge_calls += result.judge_calls
            self.usage = self.usage + result.usage
        self.latencies_ms.append(latency_ms)
        self.verdict_latency.observe(latency_ms / 1000.0)

    def _regeneration(self, result: AttemptResult, *, failed: bool) -> None:
        """TinyTroupe's regeneration statistics: a regeneration is a judged attempt after the first."""
        self.regenerations += 1
        if not failed:
            return
        self.failed_regenerations += 1
        for check in result.checks:
            if not check.timed_out:
                self.failed_scores.setdefault(check.dimension.value, Moments()).add(check.score)

    def snapshot(self) -> dict[str, Any]:
        pct = percentiles(self.latencies_ms, (50, 90, 99))
        return {
            "attempts": self.attempts,
            "drafts": self.drafts_first_attempt,
            "outcomes": dict(self.outcomes),
            "regenerations": self.regenerations,
            "failed_regenerations": self.failed_regenerations,
            "regeneration_failure_rate": self.failed_regenerations / self.regenerations if self.regenerations else 0.0,
            "failed_scores": {k: m.summary() for k, m in sorted(self.failed_scores.items())},
            "original_success_rate": self.first_attempt_passed / self.first_attempts_judged
            if self.first_attempts_judged
            else None,
            "dimension_failures": dict(self.dimension_failures),
            "dimension_timeouts": dict(self.dimension_timeouts),
            "mean_scores": {k: self.score_sums[k] / n for k, n in self.score_counts.items() if n},
            "similarity_checks": self.similarity_checks,
            "similarity_failures": self.similarity_failures,
            "latency_ms": pct,
            "judge_calls": self.judge_calls,
            "token_usage": self.usage.as_dict(),
            "dead_letters": self.dead_letters,
            "state": {**self.state, **{name: probe() for name, probe in self.probes.items()}},
        }


class TimedJudge:
    """A judge whose every call's duration goes into ``stats.judge_latency`` (errors and timeouts included)."""

    def __init__(self, inner: Judge, stats: GateStats) -> None:
        self._inner = inner
        self._stats = stats

    @property
    def name(self) -> str:
        return self._inner.name

    async def evaluate(self, request: JudgeRequest) -> JudgeResult:
        with self._stats.judge_latency.time():
            return await self._inner.evaluate(request)
