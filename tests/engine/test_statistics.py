"""Statistics: agreement with scipy, hand-checked references, and TinyTroupe Table 1 from the raw files."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from engine.errors import ConfigurationError
from engine.statistics import (
    StatisticsError,
    bootstrap_diff_ci,
    cohens_d,
    compare,
    mean,
    quadratic_weighted_kappa,
    sd,
    spearman_rho,
    welch_t_test,
)
from tests.peers import peer, require

# Timing is not what these properties test; a loaded CI machine must not turn them flaky.
relaxed = settings(deadline=None)

TABLE1 = peer("reference", "tinytroupe-table1")
scores = st.lists(st.integers(0, 9), min_size=2, max_size=60)
reals = st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=2, max_size=40)
SampleFactory = Callable[..., list[float]]


@pytest.fixture
def make_sample() -> SampleFactory:
    """Seeded normal samples: make_sample(n, loc, scale)."""
    rng = np.random.default_rng(11)

    def make(n: int = 30, loc: float = 5.0, scale: float = 1.5) -> list[float]:
        return [float(v) for v in rng.normal(loc, scale, n)]

    return make


def sig3(x: float) -> float:
    """``x`` rounded to three significant figures."""
    return float(f"{x:.3g}")


def _varies(xs: Sequence[float]) -> bool:
    # well clear of floating-point cancellation, where scipy itself warns that results are unreliable
    return max(xs) - min(xs) > 1e-3 * (1.0 + max(abs(v) for v in xs))


# --- against scipy --------------------------------------------------------------------------------------


@relaxed
@given(reals)
def test_mean_and_sd_match_numpy(xs: list[float]) -> None:
    assert mean(xs) == pytest.approx(float(np.mean(xs)), abs=1e-9)
    assert sd(xs) == pytest.approx(float(np.std(xs, ddof=1)), rel=1e-9, abs=1e-9)


# scipy warns when one sample is constant (allowed here: the other one varies)
@pytest.mark.filterwarnings("ignore:Precision loss occurred:RuntimeWarning")
@relaxed
@given(st.one_of(scores, reals), st.one_of(scores, reals))
def test_welch_matches_scipy(a: list[float], b: list[float]) -> None:
    assume(_varies(a) or _varies(b))
    ours, ref = welch_t_test(a, b), sps.ttest_ind(a, b, equal_var=False)
    assert ours.t == pytest.approx(float(ref.statistic), rel=1e-6, abs=1e-9)
    assert ours.df == pytest.approx(float(ref.df), rel=1e-6)
    assert ours.p_value == pytest.approx(float(ref.pvalue), rel=1e-6, abs=1e-12)
    assert 0.0 <= ours.p_value <= 1.0


@relaxed
@given(st.lists(st.tuples(st.integers(0, 5), st.floats(-100, 100, allow_nan=False)), min_size=2, max_size=40))
def test_spearman_matches_scipy_with_ties(pairs: list[tuple[int, float]]) -> None:
    x, y = [p[0] for p in pairs], [p[1] for p in pairs]
    assume(len(set(x)) > 1 and len(set(y)) > 1)
    assert spearman_rho(x, y) == pytest.approx(float(sps.spearmanr(x, y).statistic), abs=1e-9)


def test_spearman_of_a_constant_sample_is_nan() -> None:
    assert math.isnan(spearman_rho([3, 3, 3], [1, 2, 3]))
    assert spearman_rho([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman_rho([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)


# --- conventions and degenerate inputs ------------------------------------------------------------------


def test_compare_reports_treatment_minus_control(make_sample: SampleFactory) -> None:
    control, treatment = make_sample(40, 5.0), make_sample(40, 6.0)
    result = compare(control, treatment)
    assert result.mean_diff == pytest.approx(np.mean(treatment) - np.mean(control))
    assert result.mean_diff > 0 and result.t > 0 and result.cohens_d > 0
    assert result.p_value == welch_t_test(control, treatment).p_value
    assert result.t == -welch_t_test(control, treatment).t
    assert (result.n_control, result.n_treatment) == (40, 40)
    assert result.sd_control == pytest.approx(float(sps.tstd(control)))


def test_cohens_d_hand_example() -> None:
    # means 2 and 4, both variances 1, so the pooled sd is 1 and d = (4 - 2) / 1
    assert cohens_d([1, 2, 3], [3, 4, 5]) == pytest.approx(2.0)
    assert cohens_d([3, 4, 5], [1, 2, 3]) == pytest.approx(-2.0)
    # unequal sizes: pooled variance = (2*1 + 1*0.5) / 3
    assert cohens_d([1, 2, 3], [5, 6]) == pytest.approx((5.5 - 2) / math.sqrt(2.5 / 3))


def test_constant_samples_follow_the_documented_convention() -> None:
    same = compare([4, 4, 4], [4, 4])
    assert (same.t, same.p_value, same.cohens_d, same.df) == (0.0, 1.0, 0.0, 3.0)
    apart = compare([4, 4, 4], [6, 6])
    assert (apart.t, apart.p_value, apart.cohens_d) == (math.inf, 0.0, math.inf)
    assert welch_t_test([6, 6], [4, 4, 4]).t == math.inf


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: sd([1.0]), "at least 2"),
        (lambda: mean([]), "at least 1"),
        (lambda: welch_t_test([1, 2], [3]), "at least 2"),
        (lambda: compare([1, 2, float("nan")], [1, 2]), "NaN"),
        (lambda: cohens_d([1, 2], ["x", "y"]), "numbers"),  # type: ignore[list-item]
        (lambda: spearman_rho([1, 2, 3], [1, 2]), "same length"),
        (lambda: quadratic_weighted_kappa([1, 10], [1, 2]), "integer ratings"),
        (lambda: quadratic_weighted_kappa([1.5, 2], [1, 2]), "integer ratings"),  # type: ignore[list-item]
        (lambda: bootstrap_diff_ci([1, 2], [3, 4], level=1.0), "level"),
    ],
)
def test_bad_input_raises_a_typed_error(call: Callable[[], Any], match: str) -> None:
    with pytest.raises(StatisticsError, match=match) as info:
        call()
    assert isinstance(info.value, ConfigurationError) and isinstance(info.value, ValueError)


# --- bootstrap ------------------------------------------------------------------------------------------


def test_bootstrap_is_seeded_and_brackets_the_observed_difference(make_sample: SampleFactory) -> None:
    control, treatment = make_sample(30, 5.0), make_sample(30, 7.0)
    low, high = bootstrap_diff_ci(control, treatment)
    assert (low, high) == bootstrap_diff_ci(control, treatment, seed=0)
    assert (low, high) != bootstrap_diff_ci(control, treatment, seed=1)
    assert low < mean(treatment) - mean(control) < high
    assert low > 0  # a two-sd shift is clearly detected
    wide = bootstrap_diff_ci(control, treatment, level=0.99)
    assert wide[0] <= low and high <= wide[1]


def test_bootstrap_of_constant_samples_is_a_point() -> None:
    assert bootstrap_diff_ci([2, 2, 2], [5, 5], resamples=50) == (3.0, 3.0)


# --- quadratic weighted kappa ---------------------------------------------------------------------------


def _textbook_qwk(x: Sequence[int], y: Sequence[int], lo: int, hi: int) -> float:
    """Quadratic weighted kappa written out with loops, as in the textbook definition."""
    k, n = hi - lo + 1, len(x)
    observed = [[0.0] * k for _ in range(k)]
    for a, b in zip(x, y, strict=True):
        observed[a - lo][b - lo] += 1
    hist_x = [sum(row) for row in observed]
    hist_y = [sum(observed[i][j] for i in range(k)) for j in range(k)]
    num = den = 0.0
    for i in range(k):
        for j in range(k):
            w = (i - j) ** 2 / (k - 1) ** 2
            num += w * observed[i][j]
            den += w * hist_x[i] * hist_y[j] / n
    return 1.0 - num / den


def test_qwk_hand_checked_three_level_example() -> None:
    # observed weighted disagreement: (0,1) 1/4 + (1,2) 1/4 + (2,0) 4/4 = 1.5
    # histograms are all 2, so every expected cell is 2*2/6 and the expected disagreement is 2/3 * 3 = 2
    assert quadratic_weighted_kappa([0, 1, 2, 0, 1, 2], [0, 1, 2, 1, 2, 0], 0, 2) == pytest.approx(0.25)


def test_qwk_extremes() -> None:
    assert quadratic_weighted_kappa([0, 3, 9, 5], [0, 3, 9, 5]) == 1.0
    assert quadratic_weighted_kappa([0, 9], [9, 0]) == pytest.approx(-1.0)
    assert quadratic_weighted_kappa([7, 7, 7], [7, 7, 7]) == 1.0  # documented: nothing to disagree on


@relaxed
@given(st.lists(st.tuples(st.integers(1, 5), st.integers(1, 5)), min_size=2, max_size=30))
def test_qwk_matches_the_textbook_formula(pairs: list[tuple[int, int]]) -> None:
    x, y = [p[0] for p in pairs], [p[1] for p in pairs]
    assume(len(set(x)) > 1 or len(set(y)) > 1 or x[0] != y[0])
    assert quadratic_weighted_kappa(x, y, 1, 5) == pytest.approx(_textbook_qwk(x, y, 1, 5))
    assert quadratic_weighted_kappa(x, y, 1, 5) == pytest.approx(quadratic_weighted_kappa(y, x, 1, 5))


# --- TinyTroupe Table 1 from the raw per-agent scores ---------------------------------------------------

BRAIN = "brainstorming_and_focus_group_quantitative_experimentation_{}.json"
DEBATE = "debating_quantitative_experimentation_1c.json"
HARD, CONSISTENCY, FLUENCY = "Hard Persona Adherence", "Self-consistency", "Fluency"
# (file, metric key in the JSON, control mean, treatment mean, Welch p) — FACTS.md, "Table 1"
TABLE1_ROWS = [
    (BRAIN.format("1c"), HARD, 6.720, 5.805, 1.53e-08),
    (BRAIN.format("1c"), CONSISTENCY, 7.160, 5.000, 7.12e-37),
    (BRAIN.format("1c"), FLUENCY, 7.265, 6.745, 3.20e-09),
    (BRAIN.format("1c"), "Divergence", 6.625, 6.150, 0.0496),
    (BRAIN.format("1c"), "ideas_qty", 3.850, 8.282, 1.37e-13),
    (BRAIN.format("2.1c"), HARD, 4.146, 4.948, 1.52e-05),
    (BRAIN.format("2.1c"), CONSISTENCY, 5.604, 3.542, 2.66e-18),
    (BRAIN.format("2.1c"), FLUENCY, 6.344, 3.219, 1.98e-35),
    (BRAIN.format("2.1c"), "Divergence", 6.292, 4.875, 0.00374),
    (BRAIN.format("2.1c"), "ideas_qty", 4.167, 2.450, 0.00807),
    (BRAIN.format("2.2b"), "Persona Adherence", 5.344, 4.740, 0.0063),
    (BRAIN.format("2.2b"), "ideas_qty", 3.958, 9.292, 9.35e-08),
    (DEBATE, HARD, 6.158, 6.625, 0.0148),
    (DEBATE, CONSISTENCY, 5.808, 6.792, 2.39e-04),
]


def _raw(file: str, metric: str) -> tuple[list[float], list[float]]:
    """The raw control and treatment lists; only ``experiments.<group>.results`` is read."""
    require(TABLE1)
    experiments = json.loads((TABLE1 / file).read_text(encoding="utf-8"))["experiments"]
    control, treatment = (experiments[g]["results"][metric] for g in ("Control", "Treatment"))
    # The lists hold only integers (checked here): nothing is missing, nothing is dropped.
    assert all(isinstance(v, int) for v in control + treatment)
    return [float(v) for v in control], [float(v) for v in treatment]


@pytest.mark.parametrize(("file", "metric", "control_mean", "treatment_mean", "p"), TABLE1_ROWS)
def test_table1_row_reproduces(file: str, metric: str, control_mean: float, treatment_mean: float, p: float) -> None:
    control, treatment = _raw(file, metric)
    result = compare(control, treatment)
    assert sig3(result.mean_control) == sig3(control_mean)
    assert sig3(result.mean_treatment) == sig3(treatment_mean)
    assert abs(result.mean_control - control_mean) < 5e-4 and abs(result.mean_treatment - treatment_mean) < 5e-4
    assert sig3(result.p_value) == sig3(p)
    assert math.copysign(1.0, result.cohens_d) == math.copysign(1.0, treatment_mean - control_mean)
    for sample, ours in ((control, result.sd_control), (treatment, result.sd_treatment)):
        assert ours == pytest.approx(float(np.std(sample, ddof=1)), rel=1e-12)
        assert ours == pytest.approx(float(sps.tstd(sample)), rel=1e-12)


def test_sig3_rounds_to_three_significant_figures() -> None:
    assert (sig3(0.006296), sig3(1.5349e-08), sig3(8.28205), sig3(0.0063)) == (0.0063, 1.53e-08, 8.28, 0.0063)
