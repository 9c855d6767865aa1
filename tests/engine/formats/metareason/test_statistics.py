"""Exact beta-binomial posteriors: means and intervals against scipy and an independent HDI construction."""

from __future__ import annotations

import pytest
from scipy import optimize, stats

from engine.formats.metareason.model import StatisticalConfig
from engine.formats.metareason.statistics import MCMC_NOTE, hdi, inference_note, posterior, probability_within


def _config(alpha: float = 1.0, beta: float = 1.0, level: float = 0.95, method: str = "shortest") -> StatisticalConfig:
    return StatisticalConfig.model_validate(
        {"prior": {"alpha": alpha, "beta": beta}, "output": {"credible_interval": level, "hdi_method": method}}
    )


def _reference_hdi(a: float, b: float, level: float) -> tuple[float, float]:
    """The interval with mass ``level`` whose ends have equal density, by root finding on the lower tail mass."""

    def density_gap(p: float) -> float:
        low, high = stats.beta.ppf([p, p + level], a, b)
        return float(stats.beta.pdf(low, a, b) - stats.beta.pdf(high, a, b))

    p = optimize.brentq(density_gap, 1e-12, 1 - level - 1e-12, xtol=1e-15)
    low, high = stats.beta.ppf([p, p + level], a, b)
    return float(low), float(high)


@pytest.mark.parametrize(
    ("alpha", "beta", "k", "n", "level"),
    [(1.0, 1.0, 7, 10, 0.95), (2.0, 2.0, 30, 40, 0.9), (1.0, 1.0, 180, 200, 0.95), (0.5, 0.5, 3, 12, 0.8)],
)
def test_central_interval_and_mean_equal_scipy(alpha: float, beta: float, k: int, n: int, level: float) -> None:
    post = posterior(k, n, _config(alpha, beta, level, "central"))
    a, b = alpha + k, beta + n - k
    assert (post.alpha, post.beta) == (a, b)
    assert post.mean == pytest.approx(a / (a + b), abs=1e-15)
    assert post.low == stats.beta.ppf((1 - level) / 2, a, b)
    assert post.high == stats.beta.ppf((1 + level) / 2, a, b)
    assert post.method == "central"


@pytest.mark.parametrize(
    ("alpha", "beta", "k", "n", "level"),
    [(1.0, 1.0, 7, 10, 0.95), (2.0, 2.0, 30, 40, 0.9), (1.0, 1.0, 50, 200, 0.95), (3.0, 1.5, 2, 9, 0.99)],
)
def test_shortest_interval_is_the_true_hdi(alpha: float, beta: float, k: int, n: int, level: float) -> None:
    post = posterior(k, n, _config(alpha, beta, level))
    a, b = alpha + k, beta + n - k
    low, high = _reference_hdi(a, b, level)
    assert post.low == pytest.approx(low, abs=1e-6) and post.high == pytest.approx(high, abs=1e-6)
    assert stats.beta.cdf(post.high, a, b) - stats.beta.cdf(post.low, a, b) == pytest.approx(level, abs=1e-9)
    central = stats.beta.ppf([(1 - level) / 2, (1 + level) / 2], a, b)
    assert post.high - post.low <= central[1] - central[0] + 1e-12


def test_known_numbers_for_seven_of_ten_under_a_uniform_prior() -> None:
    post = posterior(7, 10, _config())
    assert post.mean == pytest.approx(8 / 12)
    assert (round(post.low, 4), round(post.high, 4)) == (0.4120, 0.9066)  # Beta(8, 4) 95 % HDI
    assert stats.beta.pdf(post.low, 8, 4) == pytest.approx(stats.beta.pdf(post.high, 8, 4), rel=1e-5)


def test_monotone_posteriors_give_one_sided_hdis() -> None:
    (low, high), method = hdi(1.0, 11.0, 0.95)  # 0 of 10 under a uniform prior
    assert (low, method) == (0.0, "shortest") and high == pytest.approx(stats.beta.ppf(0.95, 1, 11))
    (low, high), _ = hdi(21.0, 1.0, 0.9)
    assert high == 1.0 and low == pytest.approx(stats.beta.ppf(0.1, 21, 1))
    (low, high), method = hdi(0.5, 0.5, 0.9)  # U-shaped: no single-interval HDI
    assert method == "central" and (low, high) == pytest.approx(tuple(stats.beta.ppf([0.05, 0.95], 0.5, 0.5)))


def test_probability_within_tolerance_and_notes() -> None:
    post = posterior(85, 100, _config())
    expected = stats.beta.cdf(0.95, 86, 16) - stats.beta.cdf(0.75, 86, 16)
    assert probability_within(post, 0.85, 0.10) == pytest.approx(expected)
    mcmc = StatisticalConfig.model_validate({"inference": {"method": "mcmc", "samples": 4000, "chains": 4}})
    assert inference_note(mcmc) == MCMC_NOTE and "no MCMC was run" in MCMC_NOTE
    assert inference_note(_config()) == "exact conjugate Beta posterior"
    with pytest.raises(ValueError, match="0 <= k <= n"):
        posterior(11, 10, _config())
