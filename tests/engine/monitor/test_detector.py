"""The betting detector: its guarantee checked by simulation at the edge of the null, and its mechanics."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.errors import ConfigurationError
from engine.monitor.detector import DetectorSpec, DetectorState, alerted, restart, update


def _run(spec: DetectorSpec, xs: list[float]) -> int | None:
    state = DetectorState()
    for i, x in enumerate(xs):
        state = update(spec, state, x)
        if alerted(spec, state):
            return i
    return None


def test_false_alarms_stay_under_alpha_when_the_mean_sits_on_the_edge_of_the_null() -> None:
    # The hardest drift-free stream: its mean is exactly min_shift under the reference, every observation.
    rng = np.random.default_rng(7)
    spec = DetectorSpec(reference=8.0, min_shift=1.0, alpha=0.05)
    streams, length = 300, 400
    alarms = sum(
        _run(spec, np.clip(rng.choice([5.0, 7.0, 9.0], size=length, p=[0.25, 0.5, 0.25]), 0, 9).tolist()) is not None
        for _ in range(streams)
    )  # mean 7.0 = reference − min_shift
    # Ville: P(ever) ≤ α = 0.05; 300 streams → expected ≤ 15, allow the binomial's 99.9 % upper tail
    assert alarms <= 30


def test_a_drop_beyond_min_shift_is_detected_and_the_direction_named() -> None:
    spec = DetectorSpec(reference=8.0, min_shift=1.0, alpha=0.01)
    state = DetectorState()
    for _ in range(200):
        state = update(spec, state, 5.0)
    assert alerted(spec, state)
    assert state.direction == "drop"
    assert state.evidence >= math.log(100)


def test_a_rise_is_detected_too() -> None:
    spec = DetectorSpec(reference=3.0, min_shift=1.0, alpha=0.01)
    assert _run(spec, [7.0] * 200) is not None
    state = DetectorState()
    for _ in range(200):
        state = update(spec, state, 7.0)
    assert state.direction == "rise"


def test_a_stream_inside_the_null_keeps_its_wealth_near_one() -> None:
    spec = DetectorSpec(reference=8.0, min_shift=1.0, alpha=0.01)
    state = DetectorState()
    for _ in range(2000):
        state = update(spec, state, 8.0)
    assert state.evidence <= 0.0
    assert state.bet_drop == 0.0 and state.bet_rise == 0.0


def test_a_side_that_cannot_be_crossed_is_not_bet_on() -> None:
    spec = DetectorSpec(reference=8.5, min_shift=1.0, alpha=0.01)  # 9.5 > 9: a rise cannot leave the null
    state = DetectorState()
    for _ in range(100):
        state = update(spec, state, 9.0)
    assert state.log_rise == 0.0 and not alerted(spec, state)


def test_scores_outside_the_range_are_clipped_and_never_make_the_wealth_negative() -> None:
    spec = DetectorSpec(reference=8.0, min_shift=1.0, alpha=0.01)
    state = DetectorState()
    for x in [0.0] * 50 + [40.0, -40.0] * 10:
        state = update(spec, state, x)
        assert math.isfinite(state.log_drop) and math.isfinite(state.log_rise)


def test_restart_forgets_the_evidence_but_keeps_the_count() -> None:
    spec = DetectorSpec(reference=8.0, min_shift=1.0, alpha=0.01)
    state = DetectorState()
    for _ in range(100):
        state = update(spec, state, 4.0)
    fresh = restart(state)
    assert fresh.n == 100 and fresh.evidence == pytest.approx(0.0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"alpha": 0.0}, "monitor_alpha"),
        ({"alpha": 1.5}, "monitor_alpha"),
        ({"alpha": math.nan}, "monitor_alpha"),
        ({"min_shift": -1.0}, "monitor_min_shift"),
        ({"min_shift": 9.0}, "monitor_min_shift"),
        ({"reference": 12.0}, "reference"),
    ],
)
def test_bad_specs_are_refused_with_the_key_named(kwargs: dict[str, float], message: str) -> None:
    values = {"reference": 8.0, "min_shift": 1.0, "alpha": 0.01, **kwargs}
    with pytest.raises(ConfigurationError, match=message):
        DetectorSpec(**values).check()
