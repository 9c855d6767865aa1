"""Comparing a harness result with golden baselines.

- **regression**: the current score is more than :data:`REGRESSION_DROP` (1.0) below the baseline score.
- **interval**: a 95 % percentile-bootstrap interval of ``mean(current units) - mean(baseline units)``,
  resampling each side's unit scores independently (per-message scores for agent-level dimensions,
  per-channel scores for environment-level ones; see :mod:`engine.evaluation.units`). It needs at least
  two units on each side and is not computed for ideas quantity, a count.
- **likely regression**: a regression whose interval lies entirely below 0 (the drop is unlikely to be
  sampling noise). Without an interval a regression is never "likely".
- **stale**: the proposition set or persona changed since the baseline (content hashes differ); a stale
  dimension is reported with its delta for information but never counts as a regression.
- **other judge**: the baseline was produced by a different judge (say, scripted rules vs a live model);
  scores of different judges are not comparable, so these dimensions are shown and not compared either.
- **other conversation**: the baseline was computed on a different conversation (its sha256 differs); a
  difference in scores says nothing about drift, so it is shown and not compared.

Stale, other-judge and other-conversation dimensions are **not comparable**: :attr:`Report.incomparable`
lists them, and ``drift eval run`` exits with its own code for a run that compared nothing it was asked to.

The interval is centred on the reported delta: the bootstrap distribution of the unit-mean difference is
shifted by (delta − observed unit-mean difference), because the dimension score (a weighted aggregate over
the whole trajectory) and the mean of the unit scores are different statistics. The delta therefore always
lies inside its own interval.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from engine.evaluation.baseline import Baseline, BaselineDimension
from engine.evaluation.harness import AgentResult, DimensionResult
from engine.judges.offline import LIMITS as OFFLINE_LIMITS
from engine.judges.offline import NAME as OFFLINE_NAME
from engine.models import Dimension
from engine.statistics import bootstrap_diff_ci

REGRESSION_DROP = 1.0
INTERVAL_LEVEL = 0.95
MIN_UNITS = 2
DELTA_DIGITS = 4


class Verdict(StrEnum):
    OK = "ok"
    REGRESSION = "regression"
    LIKELY_REGRESSION = "likely regression"
    STALE = "stale"
    OTHER_JUDGE = "other judge"
    OTHER_CONVERSATION = "other conversation"
    NO_BASELINE = "no baseline"


#: Verdicts of dimensions that were shown but not compared.
NOT_COMPARABLE = frozenset({Verdict.STALE, Verdict.OTHER_JUDGE, Verdict.OTHER_CONVERSATION})


@dataclass(frozen=True, slots=True)
class DimensionComparison:
    agent_id: str
    current: DimensionResult
    baseline: float | None
    delta: float | None
    regression: bool
    likely_regression: bool
    stale: bool
    interval: tuple[float, float] | None
    verdict: Verdict

    @property
    def dimension(self) -> Dimension:
        return self.current.dimension

    @property
    def score(self) -> float:
        return self.current.score


@dataclass(frozen=True, slots=True)
class Report:
    judge: str
    comparisons: tuple[DimensionComparison, ...]
    notes: tuple[str, ...] = ()

    @property
    def regressions(self) -> tuple[DimensionComparison, ...]:
        return tuple(c for c in self.comparisons if c.regression)

    @property
    def stale(self) -> tuple[DimensionComparison, ...]:
        return tuple(c for c in self.comparisons if c.stale)

    @property
    def incomparable(self) -> tuple[DimensionComparison, ...]:
        return tuple(c for c in self.comparisons if c.verdict in NOT_COMPARABLE)

    def agents(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(c.agent_id for c in self.comparisons))

    def for_agent(self, agent_id: str) -> tuple[DimensionComparison, ...]:
        return tuple(c for c in self.comparisons if c.agent_id == agent_id)


def difference_interval(
    baseline_units: Sequence[float], current_units: Sequence[float], delta: float, *, seed: int = 0
) -> tuple[float, float] | None:
    """Bootstrap interval of ``delta`` (current - baseline), or None with too few units.

    The percentile interval of the unit-mean difference is moved so that it sits around ``delta`` the way it
    sits around the observed unit-mean difference; the bounds are then widened, if needed, to hold ``delta``.
    """
    if len(baseline_units) < MIN_UNITS or len(current_units) < MIN_UNITS:
        return None
    low, high = bootstrap_diff_ci(baseline_units, current_units, level=INTERVAL_LEVEL, seed=seed)
    observed = sum(current_units) / len(current_units) - sum(baseline_units) / len(baseline_units)
    shift = delta - observed
    return min(low + shift, delta), max(high + shift, delta)


def _delta(current: float, baseline: float) -> float:
    """Rounded like the stored baselines, so an unchanged score gives exactly 0 (never -0.0)."""
    return round(current - baseline, DELTA_DIGITS) + 0.0


def compare_dimension(
    agent_id: str,
    current: DimensionResult,
    baseline: BaselineDimension | None,
    *,
    same_judge: bool = True,
    same_conversation: bool = True,
) -> DimensionComparison:
    """Verdict for one dimension; a baseline that is not comparable shows its delta but is never a regression."""
    if baseline is None:
        return DimensionComparison(agent_id, current, None, None, False, False, False, None, Verdict.NO_BASELINE)
    delta = _delta(current.score, baseline.score)
    if baseline.content_hash != current.content_hash:
        return DimensionComparison(agent_id, current, baseline.score, delta, False, False, True, None, Verdict.STALE)
    if not same_judge:
        return DimensionComparison(
            agent_id, current, baseline.score, delta, False, False, False, None, Verdict.OTHER_JUDGE
        )
    if not same_conversation:
        return DimensionComparison(
            agent_id, current, baseline.score, delta, False, False, False, None, Verdict.OTHER_CONVERSATION
        )
    regression = delta < -REGRESSION_DROP
    interval = None
    if current.dimension is not Dimension.IDEAS_QUANTITY:
        interval = difference_interval(baseline.units, current.units, delta)
    likely = regression and interval is not None and interval[1] < 0
    verdict = Verdict.LIKELY_REGRESSION if likely else Verdict.REGRESSION if regression else Verdict.OK
    return DimensionComparison(agent_id, current, baseline.score, delta, regression, likely, False, interval, verdict)


def compare_agent(
    result: AgentResult, baseline: Baseline | None, judge: str, messages_sha256: str | None = None
) -> tuple[DimensionComparison, ...]:
    """Every dimension of the agent; a baseline of another judge or conversation is shown but not compared."""
    stored = baseline.dimensions if baseline is not None else {}
    same_judge = baseline is None or not baseline.judge or baseline.judge == judge
    same_conversation = baseline is None or not _other_conversation(baseline, messages_sha256)
    return tuple(
        compare_dimension(
            result.agent_id, d, stored.get(d.dimension), same_judge=same_judge, same_conversation=same_conversation
        )
        for d in result.dimensions
    )


def _other_conversation(baseline: Baseline, messages_sha256: str | None) -> bool:
    return bool(messages_sha256 and baseline.messages_sha256 and baseline.messages_sha256 != messages_sha256)


def build_report(
    judge: str,
    results: Sequence[AgentResult],
    baselines: dict[str, Baseline | None],
    messages_sha256: str | None = None,
) -> Report:
    """Compare every agent with its baseline and collect notes about what differs besides scores."""
    comparisons: list[DimensionComparison] = []
    notes: list[str] = []
    for result in results:
        baseline = baselines.get(result.agent_id)
        comparisons.extend(compare_agent(result, baseline, judge, messages_sha256))
        if baseline is None:
            notes.append(f"{result.agent_id}: no baseline; create one with `drift eval baseline`")
            continue
        if baseline.judge and baseline.judge != judge:
            notes.append(
                f"{result.agent_id}: baseline judged by {baseline.judge}, this run by {judge}: scores are shown, "
                "not compared"
            )
        if _other_conversation(baseline, messages_sha256):
            notes.append(
                f"{result.agent_id}: the baseline was computed on a different conversation: scores are shown, "
                "not compared"
            )
    stale_agents = sorted({c.agent_id for c in comparisons if c.stale})
    if stale_agents:
        notes.append(
            f"stale baseline(s) for {', '.join(stale_agents)}: propositions or persona changed; "
            "regenerate with `drift eval baseline`"
        )
    if judge == OFFLINE_NAME:  # what this judge can and cannot judge, in every report it made
        notes.append(OFFLINE_LIMITS)
    return Report(judge, tuple(comparisons), tuple(notes))
