"""Small, explicit statistics for treatment/control experiments (TinyTroupe Table 1) and judge calibration.

Conventions, used consistently:

* Inputs are sequences of finite numbers. Missing values are the caller's business (drop them first);
  NaN, infinities, too few values and mismatched lengths raise :class:`StatisticsError`.
* ``sd`` is the sample standard deviation (ddof = 1); it needs at least two values, and so do the t-test and
  Cohen's d for *each* sample. ``mean`` needs one value.
* :func:`welch_t_test` follows scipy's sign: ``t = (mean(a) - mean(b)) / se``. :func:`compare` and
  :func:`cohens_d` report **treatment minus control**, so a positive ``t``/``d``/``mean_diff`` in a
  :class:`Comparison` means the treatment scored higher.
* Zero variance in both samples: equal means give t = 0, p = 1.0, d = 0.0; different means give
  t = ±inf, p = 0.0, d = ±inf (the test is certain). The degrees of freedom then fall back to
  ``n_a + n_b - 2`` because the Welch–Satterthwaite ratio is 0/0.
* Rank correlation of a constant sample is undefined: :func:`spearman_rho` returns NaN.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from engine.errors import ConfigurationError


class StatisticsError(ConfigurationError, ValueError):
    """Input a statistic cannot be computed from (too few values, non-finite values, mismatched lengths)."""


def _values(xs: Sequence[float], name: str, minimum: int) -> np.ndarray:
    try:
        arr = np.asarray(xs, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise StatisticsError(f"{name} must be a sequence of numbers: {exc}") from exc
    if arr.ndim != 1:
        raise StatisticsError(f"{name} must be a flat sequence of numbers")
    if arr.size < minimum:
        raise StatisticsError(f"{name} needs at least {minimum} value(s), got {arr.size}")
    if not np.all(np.isfinite(arr)):
        raise StatisticsError(f"{name} contains NaN or infinite values; drop missing values first")
    return arr


def mean(xs: Sequence[float]) -> float:
    """Arithmetic mean of at least one value."""
    return float(np.mean(_values(xs, "sample", 1)))


def sd(xs: Sequence[float]) -> float:
    """Sample standard deviation (ddof = 1) of at least two values."""
    return float(np.std(_values(xs, "sample", 2), ddof=1))


@dataclass(frozen=True, slots=True)
class WelchResult:
    t: float
    df: float
    p_value: float


def welch_t_test(a: Sequence[float], b: Sequence[float]) -> WelchResult:
    """Two-sided Welch t-test (unequal variances); ``t = (mean(a) - mean(b)) / se`` as in scipy."""
    return _welch(_values(a, "a", 2), _values(b, "b", 2))


def _welch(x: np.ndarray, y: np.ndarray) -> WelchResult:
    va, vb = x.var(ddof=1) / x.size, y.var(ddof=1) / y.size
    diff = float(x.mean() - y.mean())
    se2 = va + vb
    if se2 == 0.0:
        df = float(x.size + y.size - 2)
        if diff == 0.0:
            return WelchResult(0.0, df, 1.0)
        return WelchResult(math.copysign(math.inf, diff), df, 0.0)
    df = float(se2**2 / (va**2 / (x.size - 1) + vb**2 / (y.size - 1)))
    t = diff / math.sqrt(se2)
    from scipy import stats as sps  # here, not at the top: scipy.stats costs a worker ~1.5 s of start-up

    return WelchResult(t, df, float(min(1.0, 2.0 * sps.t.sf(abs(t), df))))


def _pooled_sd(x: np.ndarray, y: np.ndarray) -> float:
    pooled = ((x.size - 1) * x.var(ddof=1) + (y.size - 1) * y.var(ddof=1)) / (x.size + y.size - 2)
    return math.sqrt(float(pooled))


def cohens_d(control: Sequence[float], treatment: Sequence[float]) -> float:
    """Cohen's d with the pooled sample sd: ``(mean(treatment) - mean(control)) / pooled_sd``."""
    return _cohens_d(_values(control, "control", 2), _values(treatment, "treatment", 2))


def _cohens_d(x: np.ndarray, y: np.ndarray) -> float:
    diff = float(y.mean() - x.mean())
    pooled = _pooled_sd(x, y)
    if pooled == 0.0:
        return 0.0 if diff == 0.0 else math.copysign(math.inf, diff)
    return diff / pooled


@dataclass(frozen=True, slots=True)
class Comparison:
    """One Table 1 row: both samples summarised and tested; every difference is treatment minus control."""

    n_control: int
    mean_control: float
    sd_control: float
    n_treatment: int
    mean_treatment: float
    sd_treatment: float
    mean_diff: float
    t: float
    df: float
    p_value: float
    cohens_d: float


def compare(control: Sequence[float], treatment: Sequence[float]) -> Comparison:
    """Means, sds, Welch's t-test and Cohen's d for a control and a treatment sample (≥ 2 values each)."""
    x, y = _values(control, "control", 2), _values(treatment, "treatment", 2)
    welch = _welch(y, x)  # treatment first: positive t means the treatment scored higher
    return Comparison(
        n_control=int(x.size),
        mean_control=float(x.mean()),
        sd_control=float(x.std(ddof=1)),
        n_treatment=int(y.size),
        mean_treatment=float(y.mean()),
        sd_treatment=float(y.std(ddof=1)),
        mean_diff=float(y.mean() - x.mean()),
        t=welch.t,
        df=welch.df,
        p_value=welch.p_value,
        cohens_d=_cohens_d(x, y),
    )


def bootstrap_diff_ci(
    control: Sequence[float],
    treatment: Sequence[float],
    *,
    level: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap CI of ``mean(treatment) - mean(control)``, resampling each group independently.

    Deterministic for a given ``seed`` (numpy ``default_rng``).
    """
    if not 0.0 < level < 1.0:
        raise StatisticsError(f"level must be strictly between 0 and 1, not {level!r}")
    if resamples < 1:
        raise StatisticsError(f"resamples must be at least 1, not {resamples!r}")
    x, y = _values(control, "control", 1), _values(treatment, "treatment", 1)
    rng = np.random.default_rng(seed)
    mean_x = x[rng.integers(0, x.size, size=(resamples, x.size))].mean(axis=1)
    mean_y = y[rng.integers(0, y.size, size=(resamples, y.size))].mean(axis=1)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(mean_y - mean_x, [tail, 1.0 - tail])
    return float(low), float(high)


def _paired(x: Sequence[float], y: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    a, b = _values(x, "x", 2), _values(y, "y", 2)
    if a.size != b.size:
        raise StatisticsError(f"x and y must have the same length, got {a.size} and {b.size}")
    return a, b


def spearman_rho(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rank correlation (average ranks for ties); NaN when either sample is constant."""
    a, b = _paired(x, y)
    from scipy import stats as sps  # see _welch

    ra, rb = sps.rankdata(a) - (a.size + 1) / 2.0, sps.rankdata(b) - (b.size + 1) / 2.0
    denominator = math.sqrt(float(ra @ ra) * float(rb @ rb))
    if denominator == 0.0:
        return math.nan
    return max(-1.0, min(1.0, float(ra @ rb) / denominator))


def quadratic_weighted_kappa(x: Sequence[int], y: Sequence[int], min_rating: int = 0, max_rating: int = 9) -> float:
    """Cohen's kappa with quadratic weights for two raters' integer ratings in [min_rating, max_rating].

    ``1 - Σ w·O / Σ w·E`` with ``w_ij = (i - j)² / (K - 1)²``, O the observed confusion counts and E the
    outer product of the two rating histograms divided by the number of items. When both raters give one
    and the same rating to every item there is no disagreement to expect or observe: the result is 1.0.
    """
    if max_rating <= min_rating:
        raise StatisticsError(f"max_rating ({max_rating}) must exceed min_rating ({min_rating})")
    a, b = _paired(x, y)
    for name, arr in (("x", a), ("y", b)):
        if np.any(arr != np.round(arr)) or np.any((arr < min_rating) | (arr > max_rating)):
            raise StatisticsError(f"{name} must hold integer ratings in [{min_rating}, {max_rating}]")
    k = max_rating - min_rating + 1
    ia, ib = a.astype(np.int64) - min_rating, b.astype(np.int64) - min_rating
    observed = np.zeros((k, k))
    np.add.at(observed, (ia, ib), 1.0)
    expected = np.outer(np.bincount(ia, minlength=k), np.bincount(ib, minlength=k)) / a.size
    grid = np.arange(k)
    weights = (grid[:, None] - grid[None, :]) ** 2 / (k - 1) ** 2
    expected_disagreement = float((weights * expected).sum())
    if expected_disagreement == 0.0:
        return 1.0
    return 1.0 - float((weights * observed).sum()) / expected_disagreement


__all__ = [
    "Comparison",
    "StatisticsError",
    "WelchResult",
    "bootstrap_diff_ci",
    "cohens_d",
    "compare",
    "mean",
    "quadratic_weighted_kappa",
    "sd",
    "spearman_rho",
    "welch_t_test",
]
