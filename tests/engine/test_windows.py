"""The hopping trajectory window: a superset of the sliding one whose rendering only grows between two moves of
its anchor, so consecutive checks of a conversation extend each other's prompt (issue 28)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.errors import ConfigurationError
from engine.models import Dimension, Event
from engine.prompts import build_prompt
from engine.propositions import ACTION_LEVEL_WINDOW_DEFAULTS, PropositionSet, Window
from engine.stepped_log import SteppedLog
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


LONG = make_events(400)


def held_window(total: int, first_n: int, last_n: int, hopping: bool) -> tuple[tuple[Event, ...], int, int]:
    """The window over what a channel's view holds of ``total`` events (cap 100, first 10, steps of 20)."""
    log: SteppedLog[Event] = SteppedLog(100, 10, 20)
    for event in LONG[:total]:
        log.append(event)
    return window_events(tuple(log), first_n, last_n, hopping=hopping, gap=log.gap)


@pytest.mark.parametrize("hopping", [False, True])
def test_past_the_cap_the_gate_window_over_the_held_events_is_the_window_over_the_whole(hopping: bool) -> None:
    for total in range(0, 400):
        assert held_window(total, 5, 10, hopping) == window_events(LONG[:total], 5, 10, hopping=hopping)


def test_the_rendered_evidence_of_a_hopping_window_extends_the_previous_check_past_the_cap() -> None:
    def evidence(total: int) -> tuple[str, ...]:
        shown, first_part, omitted = held_window(total, 5, 10, True)
        return build_prompt(make_request(events=shown, first_part=first_part, omitted=omitted)).evidence

    grew = 0
    for total in range(95, 260):  # across the view's steps at 101, 121, ..., 241 events
        if total % 10 != 4:  # the anchor moves at 105, 115, ...: the recent part restarts there
            assert evidence(total + 1)[: len(evidence(total))] == evidence(total)
            grew += 1
    assert grew == 149
    assert evidence(250)[1] == evidence(20)[1]  # the conversation's first event, as below the cap


@given(st.integers(101, 400), st.integers(0, 30), st.integers(0, 150), st.booleans())
def test_a_window_wider_than_the_held_events_shows_the_head_and_every_held_recent_event(
    total: int, first_n: int, last_n: int, hopping: bool
) -> None:
    shown, first_part, omitted = held_window(total, first_n, last_n, hopping)
    whole, whole_first, whole_omitted = window_events(LONG[:total], first_n, last_n, hopping=hopping)
    recent = shown[first_part:]
    assert shown[:first_part] == LONG[:first_part]
    assert first_part == (min(first_n, 10) if whole_omitted else 10)  # whole: the view's first events, the gap
    assert recent == LONG[total - len(recent) : total]  # a contiguous end of the conversation
    assert first_part + omitted + len(recent) == total  # one marker counts every event not shown
    assert set(shown) <= set(whole)  # never an event the whole history's window would not show
    assert omitted >= whole_omitted and set(recent) <= set(whole[whole_first:] if whole_omitted else whole)


@given(st.integers(0, 400), st.integers(0, 10), st.integers(0, 71), st.booleans())
def test_any_window_that_fits_what_is_held_is_the_window_over_the_whole(
    total: int, first_n: int, last_n: int, hopping: bool
) -> None:
    """docs/gate-design.md "Long conversations": first_n <= 10 and a recent part of at most 71 events."""
    if hopping and 2 * last_n - 1 > 71:
        last_n = 36
    assert held_window(total, first_n, last_n, hopping) == window_events(LONG[:total], first_n, last_n, hopping=hopping)
