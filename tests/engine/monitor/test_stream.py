"""A monitored stream: its reference, one alert at a time, re-referencing after an acknowledgement."""

from __future__ import annotations

import pytest

from engine.errors import ConfigurationError
from engine.monitor.stream import StreamPolicy, StreamState, acknowledged, observe, opened


def _feed(policy: StreamPolicy, state: StreamState, xs: list[float]) -> tuple[StreamState, list[int]]:
    fired = []
    for i, x in enumerate(xs):
        seen = observe(policy, state, x)
        state = seen.state
        if seen.fired:
            fired.append(i)
            state = opened(state, f"a{i}")
    return state, fired


def test_the_reference_is_the_mean_of_the_first_observations_then_frozen() -> None:
    policy = StreamPolicy(reference_n=4)
    state, _ = _feed(policy, StreamState.start(policy), [8.0, 8.0, 7.0, 9.0, 2.0, 2.0])
    assert state.reference == pytest.approx(8.0)
    assert state.observations == 6 and state.detector.n == 2


def test_a_baseline_reference_starts_the_detector_at_once() -> None:
    policy = StreamPolicy(reference_n=50, baseline=8.0)
    state, fired = _feed(policy, StreamState.start(policy), [4.0] * 100)
    assert state.reference == 8.0 and fired and fired[0] < 100


def test_an_open_alert_is_not_raised_again_until_acknowledged() -> None:
    policy = StreamPolicy(reference_n=10)
    state, fired = _feed(policy, StreamState.start(policy), [8.0] * 10 + [3.0] * 300)
    assert len(fired) == 1 and state.open_alert == f"a{fired[0]}"
    state = acknowledged(state)
    assert state.reference is None and state.open_alert is None
    # re-referenced on the new normal (3.0): no alert while it stays there
    state, fired = _feed(policy, state, [3.0] * 300)
    assert fired == [] and state.reference == pytest.approx(3.0)


def test_bad_policies_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="monitor_alpha"):
        StreamPolicy(alpha=2.0)
    with pytest.raises(ConfigurationError, match="reference"):
        StreamPolicy(baseline=11.0)


def test_the_state_survives_a_json_round_trip_exactly() -> None:
    import math

    import orjson

    from engine.monitor.stream import from_json, to_json

    policy = StreamPolicy(reference_n=3)
    state, _ = _feed(policy, StreamState.start(policy), [8.0, 7.0, 9.0, 6.0, 5.0, 8.0])
    back = from_json(orjson.loads(orjson.dumps(to_json(state))))
    assert back == state and math.isclose(back.recent or 0, state.recent or 1)


def test_a_trace_replays_the_evidence_and_marks_the_alert() -> None:
    from engine.monitor.stream import trace

    replayed = trace(StreamPolicy(reference_n=5), [8.0] * 5 + [2.0] * 60)
    assert replayed.reference == 8.0
    assert replayed.evidence[:5] == [None] * 4 + [0.0]  # the fifth score completes the reference
    assert len(replayed.alerts) == 1 and (replayed.evidence[replayed.alerts[0]] or 0) >= replayed.threshold
