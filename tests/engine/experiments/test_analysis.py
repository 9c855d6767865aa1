"""Experiment analysis with exact expectations: Holm, intervals, the cluster bootstrap, paper directions."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.experiments.analysis import analyse, analyse_metric, cluster_bootstrap, d_interval, holm
from engine.experiments.data import ArmSample, ExperimentData, MetricData
from engine.experiments.paper import PaperValue


def test_holm_adjusts_in_order_and_keeps_monotone() -> None:
    # sorted 0.01, 0.02, 0.04 with m = 3 → 0.03, 0.04, 0.04 (monotone), back in input order
    assert holm([0.04, 0.01, 0.02]) == pytest.approx([0.04, 0.03, 0.04])
    assert holm([0.5, None, 0.9]) == [pytest.approx(1.0), None, pytest.approx(1.0)]
    assert holm([]) == []


def test_the_d_interval_holds_d_and_shrinks_with_n() -> None:
    small, large = d_interval(0.5, 10, 10), d_interval(0.5, 1000, 1000)
    assert small is not None and large is not None
    assert small[0] < 0.5 < small[1]
    assert (large[1] - large[0]) < (small[1] - small[0])
    assert d_interval(math.inf, 3, 3) is None


def _clustered(rng: np.random.Generator, agents: int, per_agent: int, shift: float) -> ArmSample:
    values, clusters = [], []
    for agent in range(agents):
        level = rng.normal(5 + shift, 1.5)  # an agent's own level: its scores are not independent
        for _ in range(per_agent):
            values.append(float(level + rng.normal(0, 0.3)))
            clusters.append(f"a{agent}")
    return ArmSample(tuple(values), tuple(clusters))


def test_the_cluster_bootstrap_is_wider_than_welch_when_agents_repeat() -> None:
    rng = np.random.default_rng(4)
    control, treatment = _clustered(rng, 6, 10, 0.0), _clustered(rng, 6, 10, 1.0)
    row = analyse_metric(MetricData("m", control, treatment), None)
    assert row.cluster is not None and row.delta_interval is not None
    assert (row.cluster.clusters_control, row.cluster.clusters_treatment) == (6, 6)
    cluster_width = row.cluster.interval[1] - row.cluster.interval[0]
    naive_width = row.delta_interval[1] - row.delta_interval[0]
    assert cluster_width > 2 * naive_width
    assert row.cluster.interval[0] <= row.delta <= row.cluster.interval[1]  # type: ignore[operator]


def test_a_planted_effect_is_found_by_every_test() -> None:
    rng = np.random.default_rng(7)
    control, treatment = _clustered(rng, 12, 3, 0.0), _clustered(rng, 12, 3, 4.0)
    test = cluster_bootstrap(control, treatment)
    assert test is not None and test.p < 0.01 and test.interval[0] > 0
    row = analyse_metric(MetricData("m", control, treatment), PaperValue(5.0, 9.0, 0.001))
    assert row.p is not None and row.p < 1e-6
    assert row.direction_agrees is True
    opposite = analyse_metric(MetricData("m", control, treatment), PaperValue(9.0, 5.0, 0.001))
    assert opposite.direction_agrees is False


def test_too_few_values_are_reported_not_tested() -> None:
    row = analyse_metric(MetricData("m", ArmSample((1.0,)), ArmSample((2.0, 3.0))), None)
    assert row.p is None and row.note is not None and "fewer than 2" in row.note


def test_an_experiment_without_clusters_or_paper_says_so() -> None:
    data = ExperimentData("x", (MetricData("m", ArmSample((1.0, 2.0, 3.0)), ArmSample((2.0, 3.0, 4.0))),))
    report = analyse(data)
    assert any("cluster-aware test is not available" in n for n in report.notes)
    assert any("no published values" in n for n in report.notes)
    assert report.rows[0].p_holm == report.rows[0].p
