"""An anytime-valid drift detector for bounded scores: two betting e-processes, one per direction.

The question asked after every observation is "is the stream's mean still within ``min_shift`` of its
reference?". For a stream of scores in ``[low, high]`` with reference ``r`` and shift ``δ`` the detector keeps
two wealth processes, started at 1:

* **drop**: every observation ``x`` multiplies the wealth by ``1 + λ·((r − δ) − x)``;
* **rise**: every observation multiplies it by ``1 + μ·(x − (r + δ))``;

with bets ``λ, μ ≥ 0`` chosen *before* ``x`` is seen (online Newton step, as in Waudby-Smith & Ramdas,
"Estimating means of bounded random variables by betting", and Shekhar & Ramdas' sequential tests) and capped
so that no factor can be negative. While the conditional mean of every observation stays in
``[r − δ, r + δ]`` each factor has expectation at most 1, so both wealths — and their average — are
non-negative supermartingales, and by Ville's inequality the average reaches ``1/α`` with probability at most
``α`` *ever*, however long the stream runs and however often it is looked at. That is the guarantee:

    In a stream whose mean stays within ``min_shift`` of its reference, the chance of ever alerting is at most α.

A shift of exactly ``min_shift`` is still inside the null: the detector is built to tell "moved by more than
``min_shift``" from "did not", and a drift of ``min_shift + ε`` is found, more slowly the smaller ``ε`` is.
While the stream sits inside the null the bets shrink to 0 and the wealth stays near 1, and the ONS curvature
is capped so the bets can still move quickly after a long quiet stretch; the wealth does lose a little in the
null (every bet is a small loss there), so the delay after a change grows slowly with the stream's age —
``python -m ops.bench.monitor`` reports it for early and late changes. Validity does not depend on how the
bets are chosen, only on their being chosen before the observation and inside the caps.

The state is eight floats (:class:`DetectorState`), updated in O(1) per observation with no allocation beyond
the new state; ``evidence`` is the log of the averaged wealth, comparable with ``log(1/α)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

from engine.errors import ConfigurationError

#: ONS step constant of Cutkosky & Orabona (2 / (2 − ln 3)).
_ONS_STEP = 2.0 / (2.0 - math.log(3.0))
#: Bets are capped at this share of the largest non-negative bet (the usual 1/2: keeps log-wealth smooth).
_BET_CAP = 0.5
#: The ONS curvature stops growing here (points²), so the step never shrinks to nothing: after a long quiet
#: stretch a change still moves the bet within a few observations (measured in ops/bench/monitor.py).
_CURVE_CAP = 200.0


@dataclass(frozen=True, slots=True)
class DetectorSpec:
    """What a detector tests: scores in ``[low, high]``, the reference mean, the tolerated shift and α."""

    reference: float
    min_shift: float
    alpha: float
    low: float = 0.0
    high: float = 9.0

    def check(self) -> DetectorSpec:
        """This spec, or a :class:`ConfigurationError` naming the bad value (run once per policy, not per score)."""
        if not (math.isfinite(self.low) and math.isfinite(self.high) and self.low < self.high):
            raise ConfigurationError(f"monitor: score range [{self.low}, {self.high}] is not a finite interval")
        if not (math.isfinite(self.reference) and self.low <= self.reference <= self.high):
            raise ConfigurationError(f"monitor: reference {self.reference} is outside [{self.low}, {self.high}]")
        if not (math.isfinite(self.min_shift) and 0 <= self.min_shift < self.high - self.low):
            raise ConfigurationError(f"monitor_min_shift must be in [0, {self.high - self.low}), got {self.min_shift}")
        if not (math.isfinite(self.alpha) and 0 < self.alpha < 1):
            raise ConfigurationError(f"monitor_alpha must be in (0, 1), got {self.alpha}")
        return self

    @property
    def threshold(self) -> float:
        """The evidence (log wealth) at which the detector alerts: ``log(1/α)``."""
        return -math.log(self.alpha)


@dataclass(frozen=True, slots=True)
class DetectorState:
    """Both directions' log-wealth, bet and ONS curvature, and the number of observations seen."""

    n: int = 0
    log_drop: float = 0.0
    bet_drop: float = 0.0
    curve_drop: float = 1.0
    log_rise: float = 0.0
    bet_rise: float = 0.0
    curve_rise: float = 1.0

    @property
    def evidence(self) -> float:
        """Log of the averaged wealth ``(K_drop + K_rise) / 2`` (0 at the start)."""
        hi, lo = max(self.log_drop, self.log_rise), min(self.log_drop, self.log_rise)
        return hi + math.log1p(math.exp(lo - hi)) - math.log(2.0)

    @property
    def direction(self) -> Literal["drop", "rise"]:
        """``drop`` or ``rise``: the side whose wealth is larger."""
        return "drop" if self.log_drop >= self.log_rise else "rise"


def _bet(payoff: float, log_wealth: float, bet: float, curve: float, cap: float) -> tuple[float, float, float]:
    """One ONS step for one side: the new log-wealth, the next bet and the next curvature."""
    factor = 1.0 + bet * payoff
    log_wealth += math.log(factor) if factor > 0.0 else -math.inf
    grad = payoff / factor if factor > 0.0 else 0.0
    curve = min(curve + grad * grad, _CURVE_CAP)
    bet = min(max(bet + _ONS_STEP * grad / curve, 0.0), cap)
    return log_wealth, bet, curve


def update(spec: DetectorSpec, state: DetectorState, score: float) -> DetectorState:
    """The state after one more observation (``score`` is clipped into the spec's range)."""
    x = min(max(float(score), spec.low), spec.high)
    floor, ceiling = spec.reference - spec.min_shift, spec.reference + spec.min_shift
    drop, rise = state.log_drop, state.log_rise
    bet_d, curve_d, bet_r, curve_r = state.bet_drop, state.curve_drop, state.bet_rise, state.curve_rise
    if floor > spec.low:  # a drop below the floor is possible
        drop, bet_d, curve_d = _bet(floor - x, drop, bet_d, curve_d, _BET_CAP / (spec.high - floor))
    if ceiling < spec.high:  # a rise above the ceiling is possible
        rise, bet_r, curve_r = _bet(x - ceiling, rise, bet_r, curve_r, _BET_CAP / (ceiling - spec.low))
    return DetectorState(state.n + 1, drop, bet_d, curve_d, rise, bet_r, curve_r)


def alerted(spec: DetectorSpec, state: DetectorState) -> bool:
    """True once the averaged wealth has reached ``1/α``."""
    return state.evidence >= spec.threshold


def restart(state: DetectorState) -> DetectorState:
    """A fresh wealth (after an acknowledged alert), keeping nothing but the count of observations."""
    return replace(DetectorState(), n=state.n)
