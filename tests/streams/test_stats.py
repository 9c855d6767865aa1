"""Gate statistics and their Prometheus exposition: counts, rates, percentiles, and never any message text."""

from __future__ import annotations

import json
import math
import random
import re
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.gate import AttemptResult, DimensionCheck, SimilarityCheck
from engine.models import Dimension, TokenUsage
from streams.services.stats import GateStats, percentiles
from streams.worker.metrics import render_prometheus

ResultFactory = Callable[..., AttemptResult]

SECRET_DRAFT = "SECRET draft about the merger"
SECRET_RECENT = "PRIVATE earlier message about salaries"

_SAMPLE = re.compile(
    r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)"
    r'(?:\{(?P<labels>[a-zA-Z_][a-zA-Z0-9_]*="[^"\\\n]*"(?:,[a-zA-Z_][a-zA-Z0-9_]*="[^"\\\n]*")*)\})?'
    r" (?P<value>\S+)$"
)
_TYPE = re.compile(r"^# TYPE (?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$")


@pytest.fixture
def make_result() -> ResultFactory:
    """make_result(attempt, scores={dimension: score}, timed_out=(), similar=None, tokens=0)."""
    return _result


def _result(
    attempt: int = 1,
    scores: dict[Dimension, float] | None = None,
    timed_out: tuple[Dimension, ...] = (),
    similar: float | None = None,
    tokens: int = 0,
) -> AttemptResult:
    checks = [
        DimensionCheck(d, s, 7.0, s >= 7.0, usage=TokenUsage(tokens, tokens // 10), calls=1, reasoning=SECRET_DRAFT)
        for d, s in (scores or {}).items()
    ]
    checks += [DimensionCheck(d, 0.0, 7.0, True, timed_out=True) for d in timed_out]
    similarity = None if similar is None else SimilarityCheck(similar, 0.6, similar < 0.6, SECRET_RECENT)
    return AttemptResult(attempt=attempt, text=SECRET_DRAFT, checks=tuple(checks), similarity=similarity)


@pytest.fixture
def busy_stats(make_result: ResultFactory) -> GateStats:
    """Three drafts: one passes at once, one is corrected then passes, one passes because its judge timed out."""
    stats = GateStats()
    adherence, fluency = Dimension.ADHERENCE, Dimension.FLUENCY
    stats.record(make_result(1, {adherence: 8, fluency: 9}, similar=0.1, tokens=100), "passed", 1, 10.0)
    stats.record(make_result(1, {adherence: 4, fluency: 8}, similar=0.8, tokens=200), "corrected", 1, 20.0)
    stats.record(make_result(2, {adherence: 9, fluency: 8}, similar=0.2, tokens=300), "passed_after_retry", 2, 30.0)
    stats.record(make_result(1, {fluency: 7}, timed_out=(adherence,), tokens=50), "timeout_pass_through", 1, 40.0)
    return stats


def test_counts_and_rates(busy_stats: GateStats) -> None:
    snap = busy_stats.snapshot()
    assert snap["attempts"] == 4 and snap["drafts"] == 3
    assert snap["outcomes"] == {"passed": 1, "corrected": 1, "passed_after_retry": 1, "timeout_pass_through": 1}
    # TinyTroupe: failed regenerations / regenerations; the one regeneration (attempt 2) passed
    assert (snap["regenerations"], snap["failed_regenerations"]) == (1, 0)
    assert snap["regeneration_failure_rate"] == 0.0
    assert snap["original_success_rate"] == pytest.approx(2 / 3)  # a timeout pass-through is a first-attempt pass


def test_regeneration_failure_rate_and_failed_scores_follow_tinytroupe(make_result: ResultFactory) -> None:
    stats = GateStats()
    adherence, fluency = Dimension.ADHERENCE, Dimension.FLUENCY
    stats.record(make_result(1, {adherence: 2}), "corrected", 1, 1.0)  # an original: no regeneration
    stats.record(make_result(2, {adherence: 3, fluency: 8}), "corrected", 2, 1.0)
    stats.record(make_result(3, {adherence: 5, fluency: 6}, timed_out=()), "forced_through", 3, 1.0)
    stats.record(make_result(2, {adherence: 8}), "passed_after_retry", 2, 1.0)
    stats.record(make_result(2, {fluency: 2}, timed_out=(adherence,)), "rejected", 2, 1.0)
    stats.record(make_result(3), "skipped", 3, 1.0)  # silence is not a judged regeneration
    snap = stats.snapshot()
    assert (snap["regenerations"], snap["failed_regenerations"]) == (4, 3)
    assert snap["regeneration_failure_rate"] == pytest.approx(3 / 4)
    # scores of failed regenerations only (not the original's 2, not the timed-out placeholder 0)
    assert snap["failed_scores"]["adherence"] == {"n": 2, "mean": pytest.approx(4.0), "sd": pytest.approx(1.0)}
    fluency_scores = [8.0, 6.0, 2.0]
    mean = sum(fluency_scores) / 3
    sd = (sum((x - mean) ** 2 for x in fluency_scores) / 3) ** 0.5
    assert snap["failed_scores"]["fluency"] == {"n": 3, "mean": pytest.approx(mean), "sd": pytest.approx(sd)}
    samples = _parse(render_prometheus(stats))
    assert _value(samples, "drift_regeneration_failure_rate") == pytest.approx(0.75)
    assert _value(samples, "drift_regenerations_total") == 4
    assert _value(samples, "drift_failed_regenerations_total") == 3
    assert _value(samples, "drift_failed_score_mean", dimension="adherence") == pytest.approx(4.0)
    assert _value(samples, "drift_failed_score_sd", dimension="adherence") == pytest.approx(1.0)


def test_unjudged_first_attempts_are_not_in_the_original_success_rate(make_result: ResultFactory) -> None:
    stats = GateStats()
    stats.record(make_result(1), "skipped", 1, 1.0)
    stats.record(make_result(1), "not_gated_yet", 1, 1.0)
    stats.record(make_result(1, {Dimension.FLUENCY: 9}), "passed", 1, 1.0)
    stats.record(make_result(1, {Dimension.FLUENCY: 2}), "corrected", 1, 1.0)
    snap = stats.snapshot()
    assert snap["drafts"] == 4 and snap["original_success_rate"] == pytest.approx(1 / 2)


def test_per_dimension_failures_timeouts_and_means(busy_stats: GateStats) -> None:
    snap = busy_stats.snapshot()
    assert snap["dimension_failures"] == {"adherence": 1, "fluency": 0}
    assert snap["dimension_timeouts"] == {"adherence": 1}
    # a timed-out dimension has no score: it does not drag the mean down with its placeholder 0
    assert snap["mean_scores"] == {"adherence": pytest.approx(7.0), "fluency": pytest.approx(8.0)}


def test_similarity_counts(busy_stats: GateStats) -> None:
    snap = busy_stats.snapshot()
    assert (snap["similarity_checks"], snap["similarity_failures"]) == (3, 1)


def test_latency_percentiles(busy_stats: GateStats) -> None:
    latency = busy_stats.snapshot()["latency_ms"]
    assert latency["p50"] == pytest.approx(25.0)
    assert 10.0 <= latency["p50"] <= latency["p90"] <= latency["p99"] <= 40.0


def test_judge_calls_and_token_sums(busy_stats: GateStats) -> None:
    snap = busy_stats.snapshot()
    assert snap["judge_calls"] == 7  # one per scored dimension; timed-out checks made no finished call
    assert snap["token_usage"]["input_tokens"] == 2 * 100 + 2 * 200 + 2 * 300 + 50
    assert snap["token_usage"]["output_tokens"] == 2 * 10 + 2 * 20 + 2 * 30 + 5


def test_an_empty_snapshot_has_no_rates_to_invent() -> None:
    snap = GateStats().snapshot()
    assert snap["attempts"] == 0 and snap["regeneration_failure_rate"] == 0.0
    assert snap["original_success_rate"] is None
    assert snap["latency_ms"] == {"p50": None, "p90": None, "p99": None}
    assert snap["mean_scores"] == {}


@settings(deadline=None, max_examples=40)
@given(st.lists(st.floats(0, 60_000, allow_nan=False), min_size=1, max_size=200))
def test_percentiles_are_ordered_and_bounded(latencies: list[float]) -> None:
    stats = GateStats()
    for value in latencies:
        stats.record(_result(1, {Dimension.FLUENCY: 8}), "passed", 1, value)
    pct = stats.snapshot()["latency_ms"]
    assert min(latencies) - 1e-9 <= pct["p50"] <= pct["p90"] + 1e-9 <= pct["p99"] + 2e-9 <= max(latencies) + 3e-9


def test_the_snapshot_holds_no_message_text(busy_stats: GateStats) -> None:
    dumped = json.dumps(busy_stats.snapshot())
    assert "SECRET" not in dumped and "PRIVATE" not in dumped


# --- Prometheus -----------------------------------------------------------------------------------------


def _parse(text: str) -> list[tuple[str, dict[str, str], float]]:
    """Samples of a Prometheus text exposition; fails on any malformed line or an undeclared metric."""
    declared: set[str] = set()
    samples = []
    assert text.endswith("\n")
    for line in text.splitlines():
        if line.startswith("# TYPE"):
            match = _TYPE.match(line)
            assert match, line
            declared.add(match.group("name"))
            continue
        if line.startswith("# HELP "):
            continue
        match = _SAMPLE.match(line)
        assert match, f"not a sample line: {line!r}"
        family = re.sub(r"_(bucket|sum|count|created)$", "", match.group("name"))
        assert {match.group("name"), family} & declared, f"no TYPE before {line!r}"
        labels = dict(re.findall(r'(\w+)="([^"]*)"', match.group("labels") or ""))
        samples.append((match.group("name"), labels, float(match.group("value"))))
    return samples


def _value(samples: list[tuple[str, dict[str, str], float]], name: str, **labels: str) -> float:
    (found,) = [v for n, ls, v in samples if n == name and ls == labels]
    return found


def test_prometheus_text_parses_and_carries_the_numbers(busy_stats: GateStats) -> None:
    samples = _parse(render_prometheus(busy_stats))
    assert _value(samples, "drift_attempts_total") == 4
    assert _value(samples, "drift_outcomes_total", outcome="corrected") == 1
    assert _value(samples, "drift_regeneration_failure_rate") == 0.0
    assert _value(samples, "drift_dimension_failures_total", dimension="adherence") == 1
    assert _value(samples, "drift_dimension_timeouts_total", dimension="adherence") == 1
    assert _value(samples, "drift_mean_score", dimension="fluency") == pytest.approx(8.0)
    assert _value(samples, "drift_similarity_failures_total") == 1
    # verdict latency is a histogram (seconds): 10, 20, 30 and 40 ms
    assert _value(samples, "drift_verdict_latency_seconds_count") == 4
    assert _value(samples, "drift_verdict_latency_seconds_sum") == pytest.approx(0.1)
    assert _value(samples, "drift_verdict_latency_seconds_bucket", le="0.01") == 1
    assert _value(samples, "drift_verdict_latency_seconds_bucket", le="0.025") == 2
    assert _value(samples, "drift_verdict_latency_seconds_bucket", le="0.05") == 4
    assert _value(samples, "drift_verdict_latency_seconds_bucket", le="+Inf") == 4
    assert _value(samples, "drift_judge_calls_total") == 7
    assert _value(samples, "drift_judge_tokens_total", kind="input_tokens") == 1250
    assert _value(samples, "drift_dead_letters_total") == 0
    assert all(math.isfinite(v) for _, _, v in samples)


def test_prometheus_of_an_empty_worker_parses() -> None:
    samples = _parse(render_prometheus(GateStats()))
    assert _value(samples, "drift_attempts_total") == 0
    assert _value(samples, "drift_verdict_latency_seconds_count") == 0
    assert _value(samples, "drift_judge_latency_seconds_count") == 0


def test_prometheus_carries_no_message_text(busy_stats: GateStats) -> None:
    text = render_prometheus(busy_stats)
    assert "SECRET" not in text and "PRIVATE" not in text
    assert "merger" not in text and "salaries" not in text


def test_dead_letters_are_exposed() -> None:
    stats = GateStats()
    stats.dead_letters = 3
    assert _value(_parse(render_prometheus(stats)), "drift_dead_letters_total") == 3


async def test_judge_latency_is_a_histogram_of_every_call() -> None:
    from engine.judges.base import JudgeRequest, JudgeResult
    from streams.services.stats import TimedJudge

    class Failing:
        name = "failing"

        async def evaluate(self, request: JudgeRequest) -> JudgeResult:
            raise TimeoutError

    stats = GateStats()
    judge = TimedJudge(Failing(), stats)
    for _ in range(2):
        with pytest.raises(TimeoutError):
            await judge.evaluate(None)  # type: ignore[arg-type]
    samples = _parse(render_prometheus(stats))
    assert _value(samples, "drift_judge_latency_seconds_count") == 2  # failed calls count too
    assert judge.name == "failing"


@pytest.mark.parametrize("n", [2, 3, 10, 1_000])
def test_latency_percentiles_are_numpys_linear_ones(n: int) -> None:
    import numpy as np

    rng = random.Random(n)
    values = [rng.expovariate(0.01) for _ in range(n)]
    expected = {f"p{q}": float(np.percentile(values, q)) for q in (50, 90, 99)}
    assert percentiles(values, (50, 90, 99)) == pytest.approx(expected, rel=1e-12)
    assert percentiles([7.0], (50, 99)) == {"p50": 7.0, "p99": 7.0}  # one value is every percentile
