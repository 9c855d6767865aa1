"""The hopping trajectory window: a superset of the sliding one whose rendering only grows between two moves of
its anchor, so consecutive checks of a conversation extend each other's prompt (issue 28)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.errors import ConfigurationError
from engine.models import Dimension
from engine.prompts import build_prompt
from engine.propositions import ACTION_LEVEL_WINDOW_DEFAULTS, PropositionSet, Window
from engine.windows import window_events
from ops.fakes.judge_requests import make_events, make_request

HISTORY = make_events(80)


@given(st.integers(0, 80), st.integers(0, 8), st.integers(1, 12))
def test_hopping_keeps_the_head_and_between_last_n_and_twice_last_n_recent_events(
    total: int, first_n: int, last_n: int
) -> None:
    events = HISTORY[:total]
    shown, first_part, omitted = window_events(events, first_n, last_n, hopping=True)
    if omitted == 0:
        assert shown == events and total < first_n + 2 * last_n
        return
    assert shown[:first_part] == events[:first_n] and first_part == first_n
    assert omitted % last_n == 0
    recent = shown[first_part:]
    assert last_n <= len(recent) <= 2 * last_n - 1
    assert recent == events[first_n + omitted :]  # nothing repeated, nothing skipped after the anchor


@given(st.integers(0, 80), st.integers(0, 8), st.integers(0, 12))
def test_hopping_shows_everything_the_sliding_window_shows(total: int, first_n: int, last_n: int) -> None:
    events = HISTORY[:total]
    sliding = set(window_events(events, first_n, last_n)[0])
    assert sliding <= set(window_events(events, first_n, last_n, hopping=True)[0])


def test_between_two_moves_of_the_anchor_the_window_only_grows() -> None:
    moves = 0
    for total in range(1, 79):
        before, _, omitted_before = window_events(HISTORY[:total], 5, 10, hopping=True)
        after, _, omitted_after = window_events(HISTORY[: total + 1], 5, 10, hopping=True)
        if omitted_after == omitted_before:
            assert after[: len(before)] == before and len(after) == len(before) + 1
        else:
            moves += 1
            assert omitted_after == omitted_before + 10 and len(after) == 15
    assert moves == 6  # at 25, 35, ..., 75 events


def test_the_sliding_window_moves_with_every_event() -> None:
    before = window_events(HISTORY[:20], 5, 10)[0]
    after = window_events(HISTORY[:21], 5, 10)[0]
    assert after[:5] == before[:5] and after[5:] != before[5:]
    assert window_events(HISTORY[:20], 5, 10, hopping=True)[0] == HISTORY[:20]


def test_the_rendered_evidence_of_a_hopping_window_extends_the_previous_check() -> None:
    def evidence(total: int) -> tuple[str, ...]:
        shown, first_part, omitted = window_events(HISTORY[:total], 5, 10, hopping=True)
        return build_prompt(make_request(events=shown, first_part=first_part, omitted=omitted)).evidence

    for total in (10, 26, 33):  # a whole history, then two checks after the anchor's first move
        assert evidence(total + 1)[: len(evidence(total))] == evidence(total)
    assert evidence(35)[: len(evidence(34))] != evidence(34)  # the anchor moved: the recent part restarts
    assert evidence(35)[:6] == evidence(34)[:6]  # the opening and the first five events stay


def test_a_zero_recent_part_keeps_the_head_only_in_both_shapes() -> None:
    assert window_events(HISTORY[:9], 3, 0, hopping=True) == window_events(HISTORY[:9], 3, 0) == (HISTORY[:3], 3, 6)
    with pytest.raises(ConfigurationError):
        window_events(HISTORY, 1, -1, hopping=True)


def test_a_proposition_sets_own_sizes_keep_the_callers_shape() -> None:
    pset = PropositionSet(dimension=Dimension.ADHERENCE, first_n=20, last_n=60)
    hopping = Window(first_n=5, last_n=10, hopping=True)
    assert pset.window(hopping) == Window(first_n=20, last_n=60, hopping=True)
    assert pset.window(ACTION_LEVEL_WINDOW_DEFAULTS).hopping is False
