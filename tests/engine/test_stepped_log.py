"""The stepped log behind a channel's history: below its cap it is the whole history; past it, the first items
and the recent ones dropped in steps, with the gap that numbers the rest as the whole history would."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.errors import ConfigurationError
from engine.stepped_log import Held, SteppedLog, merge_logs
from engine.windows import Gap


def filled(n: int, cap: int = 100, head: int = 10, step: int = 20) -> SteppedLog[int]:
    log: SteppedLog[int] = SteppedLog(cap, head, step)
    for i in range(n):
        log.append(i)
    return log


@st.composite
def shapes(draw: st.DrawFn) -> tuple[int, int, int, int]:
    cap = draw(st.integers(1, 30))
    head = draw(st.integers(0, cap - 1))
    return draw(st.integers(0, 120)), cap, head, draw(st.integers(1, cap - head))


@given(shapes())
def test_the_log_is_the_head_and_a_suffix_with_the_gap_between(shape: tuple[int, int, int, int]) -> None:
    n, cap, head, step = shape
    log = filled(n, cap, head, step)
    whole = list(range(n))
    if n <= cap:  # below the cap: everything, like the deque it replaces
        assert list(log) == whole and log.gap is None
        return
    assert log.gap is not None and log.gap.at == head and log.gap.size % step == 0
    assert list(log) == whole[:head] + whole[head + log.gap.size :]
    assert cap - step < len(log) <= cap  # bounded, and never dropping more than one step at a time
    assert list(reversed(log)) == list(log)[::-1]


def test_between_two_steps_the_log_only_grows() -> None:
    log, drops = filled(0), 0
    for i in range(400):
        before, gap = list(log), log.gap
        log.append(i)
        if log.gap == gap:
            assert list(log) == [*before, i]
        else:
            drops += 1
            assert gap is None or log.gap == Gap(10, gap.size + 20)
            assert list(log)[:10] == list(range(10))
    assert drops == (400 - 100 - 1) // 20 + 1  # at 101, 121, ..., 381 items


def test_a_log_needs_room_for_its_head_and_one_step() -> None:
    for cap, head, step in ((10, 10, 1), (10, 5, 6), (10, 2, 0), (10, -1, 1)):
        with pytest.raises(ConfigurationError):
            SteppedLog(cap, head, step)


@given(st.lists(st.booleans(), max_size=150), st.integers(4, 12), st.integers(0, 2), st.integers(1, 2))
def test_merged_logs_number_every_item_after_the_gap_as_the_whole_history_does(
    owners: list[bool], cap: int, head: int, step: int
) -> None:
    """Two logs of one history (say a run's channel and the same channel's events without a run), items in
    arrival order: after the merged gap, each held item's position plus the gap is its position in the whole."""
    logs = [SteppedLog[int](cap, head, step), SteppedLog[int](cap, head, step)]
    for seq, owner in enumerate(owners):
        logs[owner].append(seq)
    held = merge_logs(logs, lambda seq: seq)
    if held.gap is None:
        assert held.items == tuple(range(len(owners)))
        return
    before, after = held.items[: held.gap.at], held.items[held.gap.at :]
    assert before == tuple(range(len(before)))  # the first items, nothing missing among them
    assert after == tuple(range(len(owners) - len(after), len(owners)))  # a contiguous end of the history
    assert len(before) + held.gap.size + len(after) == len(owners)


def test_leaving_an_item_out_moves_the_gap_past_the_removed_ones_before_it() -> None:
    held = Held((0, 1, 2, 50, 51), Gap(3, 47))
    assert held.keep(lambda i: i != 1) == Held((0, 2, 50, 51), Gap(2, 47))
    assert held.keep(lambda i: i != 51) == Held((0, 1, 2, 50), Gap(3, 47))
    assert held.after_gap() == (50, 51) and Held((1, 2)).after_gap() == (1, 2)
    assert Held((1, 2)).keep(lambda i: i > 1) == Held((2,))
