"""Table 1, computed: per metric, both arms summarised and tested, with intervals the paper did not report.

For every metric: n, mean and sd per arm; Δ = treatment − control; Welch's t and two-sided p; Cohen's d
(pooled sd, ddof 1) with a normal-approximation 95 % interval; a 95 % percentile-bootstrap interval of Δ
(each arm resampled independently); and, when the samples say which agent each value belongs to, a **cluster
bootstrap** that resamples whole agents — the (agent, session) scores of one agent are not independent, which
Welch's test assumes. p-values are Holm-adjusted across the experiment's metrics. When the paper published
the metric, its values stand beside ours with whether the direction (treatment above or below control) agrees.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from engine.experiments.data import ArmSample, ExperimentData, MetricData
from engine.experiments.paper import PaperValue, paper_value
from engine.statistics import bootstrap_diff_ci, compare

LEVEL = 0.95
RESAMPLES = 2000
_Z = 1.959963984540054


@dataclass(frozen=True, slots=True)
class ArmSummary:
    n: int
    mean: float | None
    sd: float | None


@dataclass(frozen=True, slots=True)
class ClusterTest:
    clusters_control: int
    clusters_treatment: int
    interval: tuple[float, float]
    p: float


@dataclass(frozen=True, slots=True)
class MetricRow:
    metric: str
    title: str
    kind: str
    control: ArmSummary
    treatment: ArmSummary
    delta: float | None = None
    welch_t: float | None = None
    df: float | None = None
    p: float | None = None
    p_holm: float | None = None
    cohens_d: float | None = None
    d_interval: tuple[float, float] | None = None
    delta_interval: tuple[float, float] | None = None
    cluster: ClusterTest | None = None
    paper: PaperValue | None = None
    direction_agrees: bool | None = None
    note: str | None = None


@dataclass(frozen=True, slots=True)
class ExperimentReport:
    name: str
    source: str
    rows: tuple[MetricRow, ...]
    notes: tuple[str, ...] = ()


def _summary(sample: ArmSample) -> ArmSummary:
    values = np.asarray(sample.values, dtype=float)
    mean = float(values.mean()) if values.size else None
    sd = float(values.std(ddof=1)) if values.size >= 2 else None
    return ArmSummary(int(values.size), mean, sd)


def d_interval(d: float, n_control: int, n_treatment: int) -> tuple[float, float] | None:
    """Normal-approximation interval of Cohen's d (Hedges & Olkin's standard error)."""
    if not math.isfinite(d):
        return None
    se = math.sqrt((n_control + n_treatment) / (n_control * n_treatment) + d * d / (2 * (n_control + n_treatment)))
    return d - _Z * se, d + _Z * se


def cluster_bootstrap(control: ArmSample, treatment: ArmSample, *, seed: int = 0) -> ClusterTest | None:
    """Resample whole clusters (agents) within each arm; interval of Δ and a two-sided bootstrap p."""
    if control.clusters is None or treatment.clusters is None:
        return None
    groups_c, groups_t = _groups(control), _groups(treatment)
    if len(groups_c) < 2 or len(groups_t) < 2:
        return None
    rng = np.random.default_rng(seed)
    diffs = np.empty(RESAMPLES)
    for i in range(RESAMPLES):
        diffs[i] = _resampled_mean(groups_t, rng) - _resampled_mean(groups_c, rng)
    tail = (1 - LEVEL) / 2
    low, high = np.quantile(diffs, [tail, 1 - tail])
    p = min(1.0, 2 * min(float(np.mean(diffs <= 0)), float(np.mean(diffs >= 0))))
    return ClusterTest(len(groups_c), len(groups_t), (float(low), float(high)), p)


def _groups(sample: ArmSample) -> list[np.ndarray]:
    by: dict[str, list[float]] = {}
    for cluster, value in zip(sample.clusters or (), sample.values, strict=True):
        by.setdefault(cluster, []).append(value)
    return [np.asarray(v, dtype=float) for v in by.values()]


def _resampled_mean(groups: list[np.ndarray], rng: np.random.Generator) -> float:
    chosen = rng.integers(0, len(groups), size=len(groups))
    return float(np.concatenate([groups[i] for i in chosen]).mean())


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm–Bonferroni adjusted p-values (None stays None and does not count as a test)."""
    present = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    adjusted: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (p, index) in enumerate(present):
        running = max(running, min(1.0, (len(present) - rank) * p))
        adjusted[index] = running
    return adjusted


def analyse_metric(data: MetricData, paper: PaperValue | None, *, seed: int = 0) -> MetricRow:
    control, treatment = _summary(data.control), _summary(data.treatment)
    base = MetricRow(data.metric, data.title, data.kind, control, treatment, paper=paper)
    if control.n < 2 or treatment.n < 2:
        return replace(base, note="fewer than 2 values in an arm: not tested")
    result = compare(data.control.values, data.treatment.values)
    delta_ci = bootstrap_diff_ci(data.control.values, data.treatment.values, level=LEVEL, seed=seed)
    agrees = None if paper is None else _sign(result.mean_diff) == paper.direction
    return replace(
        base,
        delta=result.mean_diff,
        welch_t=result.t,
        df=result.df,
        p=result.p_value,
        cohens_d=result.cohens_d,
        d_interval=d_interval(result.cohens_d, result.n_control, result.n_treatment),
        delta_interval=delta_ci,
        cluster=cluster_bootstrap(data.control, data.treatment, seed=seed),
        direction_agrees=agrees,
    )


def _sign(value: float) -> int:
    return (value > 0) - (value < 0)


def analyse(data: ExperimentData, *, seed: int = 0) -> ExperimentReport:
    rows = [analyse_metric(m, paper_value(data.paper_key, m.metric), seed=seed) for m in data.metrics]
    adjusted = holm([r.p for r in rows])
    rows = [replace(r, p_holm=p) for r, p in zip(rows, adjusted, strict=True)]
    notes = list(data.notes)
    if not any(m.control.clusters for m in data.metrics):
        notes.append(
            "no agent ids in the samples: the cluster-aware test is not available (Welch's test treats every "
            "(agent, session) score as independent)"
        )
    if data.paper_key is None:
        notes.append("no published values for this experiment: directions are not compared")
    return ExperimentReport(data.name, data.source, tuple(rows), tuple(notes))
