"""Beta-binomial posteriors for oracle pass rates, computed exactly.

With a Beta(α, β) prior and k passes in n scored variants the posterior is Beta(α + k, β + n − k) (the
prior is conjugate), so the mean and any interval come straight from scipy's beta distribution: no sampler,
no Monte-Carlo error. A file that asks for ``inference.method: mcmc`` gets the same exact numbers and a note
saying so.

Intervals at level c (``statistical_config.output.credible_interval``):

* ``central`` — equal tails: the (1 − c)/2 and (1 + c)/2 quantiles;
* ``shortest`` — the highest-density interval: the narrowest [ppf(p), ppf(p + c)] over the lower tail mass
  p in [0, 1 − c], found by bounded scalar minimisation; for a unimodal posterior it is the interval whose
  ends have equal density. When a parameter is ≤ 1 the density is monotone (or flat) and the HDI is one-sided:
  [0, ppf(c)] or [ppf(1 − c), 1]; a U-shaped posterior (both ≤ 1, not flat) has no single-interval HDI, so
  the central interval is reported and labelled as such.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from scipy import optimize, stats

from engine.formats.metareason.model import StatisticalConfig

IntervalMethod = Literal["shortest", "central"]
EXACT_NOTE = "exact conjugate Beta posterior"
MCMC_NOTE = (
    "the file asks for inference.method 'mcmc'; the beta-binomial posterior is conjugate, so it was computed "
    "exactly and no MCMC was run (samples, chains and target_accept are not used)"
)


@dataclass(frozen=True, slots=True)
class Posterior:
    """Beta(alpha, beta) after ``k`` successes in ``n`` trials, with its mean and credible interval."""

    k: int
    n: int
    alpha: float
    beta: float
    mean: float
    low: float
    high: float
    level: float
    method: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "n": self.n,
            "rate": self.k / self.n if self.n else None,
            "posterior": {"alpha": self.alpha, "beta": self.beta},
            "mean": self.mean,
            "interval": {"low": self.low, "high": self.high, "level": self.level, "method": self.method},
        }


def central_interval(a: float, b: float, level: float) -> tuple[float, float]:
    tail = (1.0 - level) / 2.0
    return float(stats.beta.ppf(tail, a, b)), float(stats.beta.ppf(1.0 - tail, a, b))


def hdi(a: float, b: float, level: float) -> tuple[tuple[float, float], str]:
    """The highest-density interval of Beta(a, b) at ``level`` and the method actually used."""
    if a <= 1.0 and b <= 1.0:
        return central_interval(a, b, level), "central" if (a, b) != (1.0, 1.0) else "shortest"
    if a <= 1.0:
        return (0.0, float(stats.beta.ppf(level, a, b))), "shortest"
    if b <= 1.0:
        return (float(stats.beta.ppf(1.0 - level, a, b)), 1.0), "shortest"

    def width(p: float) -> float:
        return float(stats.beta.ppf(p + level, a, b) - stats.beta.ppf(p, a, b))

    found = optimize.minimize_scalar(width, bounds=(0.0, 1.0 - level), method="bounded", options={"xatol": 1e-12})
    p = float(found.x)
    return (float(stats.beta.ppf(p, a, b)), float(stats.beta.ppf(p + level, a, b))), "shortest"


def posterior(k: int, n: int, config: StatisticalConfig) -> Posterior:
    """The posterior of a pass rate given ``k`` passes of ``n`` and the file's prior and output settings."""
    if not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    a = config.prior.alpha + k
    b = config.prior.beta + (n - k)
    level = config.output.credible_interval
    if config.output.hdi_method == "central":
        (low, high), method = central_interval(a, b, level), "central"
    else:
        (low, high), method = hdi(a, b, level)
    mean = float(stats.beta.mean(a, b))
    return Posterior(k, n, a, b, mean, low, high, level, method)


def probability_within(post: Posterior, centre: float, tolerance: float) -> float:
    """Posterior probability that the rate lies in [centre − tolerance, centre + tolerance]."""
    low, high = max(0.0, centre - tolerance), min(1.0, centre + tolerance)
    return float(stats.beta.cdf(high, post.alpha, post.beta) - stats.beta.cdf(low, post.alpha, post.beta))


def inference_note(config: StatisticalConfig) -> str:
    return MCMC_NOTE if config.inference.method == "mcmc" else EXACT_NOTE
