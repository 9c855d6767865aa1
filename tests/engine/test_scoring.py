"""Scoring arithmetic: inversion, hard penalty and the weighted mean (properties)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.errors import ConfigurationError
from engine.scoring import adjust, weighted_mean
from tests.engine.conftest import relaxed

raws = st.integers(0, 9)
score_values = st.floats(0, 9, allow_nan=False)
weights = st.floats(0, 10, allow_nan=False)


# --- adjust ---------------------------------------------------------------------------------------------


@given(raws)
def test_inversion_alone_is_nine_minus_raw(raw: int) -> None:
    assert adjust(raw, inverted=True, hard=False) == 9 - raw
    assert adjust(raw, inverted=False, hard=False) == raw


@given(raws, st.booleans())
def test_hard_penalty_applies_after_inversion_to_scores_below_nine_only(raw: int, inverted: bool) -> None:
    before_penalty = 9 - raw if inverted else raw
    penalised = adjust(raw, inverted=inverted, hard=True)
    if before_penalty == 9:
        assert penalised == 9
    else:
        assert penalised == pytest.approx(before_penalty * 0.8)
        assert penalised < 9


@given(raws, st.booleans(), st.booleans())
def test_adjusted_scores_stay_in_range_and_penalty_never_helps(raw: int, inverted: bool, hard: bool) -> None:
    value = adjust(raw, inverted=inverted, hard=hard)
    assert 0 <= value <= 9
    assert value <= adjust(raw, inverted=inverted, hard=False)


def test_penalty_order_matters_for_inverted_extremes() -> None:
    # invert, then penalise: raw 2 -> 7 -> 5.6 (penalising first would give 9 - 1.6 = 7.4);
    # raw 0 inverted is a perfect 9, which the penalty leaves alone
    assert adjust(0, inverted=True, hard=True) == 9
    assert adjust(9, inverted=True, hard=True) == 0
    assert adjust(2, inverted=True, hard=True) == pytest.approx(5.6)


# --- weighted_mean --------------------------------------------------------------------------------------

pairs_with_weight = st.lists(st.tuples(score_values, weights), min_size=1, max_size=20).filter(
    lambda ps: sum(w for _, w in ps) > 1e-6
)


@relaxed
@given(pairs_with_weight)
def test_weighted_mean_lies_between_the_weighted_scores(pairs: list[tuple[float, float]]) -> None:
    counted = [s for s, w in pairs if w > 0]
    mean = weighted_mean(pairs)
    assert min(counted) - 1e-9 <= mean <= max(counted) + 1e-9


@relaxed
@given(pairs_with_weight, st.floats(1e-3, 1e3))
def test_weighted_mean_ignores_the_scale_of_weights(pairs: list[tuple[float, float]], factor: float) -> None:
    scaled = [(s, w * factor) for s, w in pairs]
    assert weighted_mean(scaled) == pytest.approx(weighted_mean(pairs), abs=1e-9)


@relaxed
@given(pairs_with_weight, st.lists(score_values, min_size=1, max_size=5))
def test_zero_weight_propositions_do_not_move_the_mean(pairs: list[tuple[float, float]], extra: list[float]) -> None:
    assert weighted_mean([*pairs, *((s, 0.0) for s in extra)]) == pytest.approx(weighted_mean(pairs), abs=1e-12)


@given(st.lists(score_values, min_size=1, max_size=10))
def test_equal_weights_give_the_arithmetic_mean(values: list[float]) -> None:
    assert weighted_mean([(v, 0.5) for v in values]) == pytest.approx(sum(values) / len(values))


def test_weight_pulls_the_mean_towards_the_heavier_score() -> None:
    assert weighted_mean([(9.0, 3.0), (1.0, 1.0)]) == pytest.approx(7.0)


@given(st.lists(score_values, min_size=1, max_size=10))
def test_all_zero_weights_are_a_configuration_error(values: list[float]) -> None:
    with pytest.raises(ConfigurationError, match="weight"):
        weighted_mean([(v, 0.0) for v in values])
