"""The long-channel cost benchmark: the replay it judges and the two views it compares."""

from __future__ import annotations

from engine.windows import window_events
from ops.bench.cost_long import LONG_EVENTS, LONG_ROWS, RUN, held, long_events, long_headline
from streams.runtime.history import HistoryView


def test_the_replay_loops_the_office_conversation_forward_in_time() -> None:
    events = long_events("#sales", 20)
    assert len(events) == LONG_EVENTS > 100
    stamps = [e.ts for e in events if e.ts is not None]
    assert len(stamps) == LONG_EVENTS and stamps == sorted(stamps)
    assert {e.channel for e in events} == {"#sales"}


def test_past_the_cap_the_views_differ_and_after_windows_the_whole_conversation() -> None:
    events, live = long_events("#general", 0), HistoryView()
    for i, event in enumerate(events[:250]):
        live.record(f"m{i}", RUN, event)
    before, no_gap = held("before", events[:250], live, "#general")
    after, gap = held("after", events[:250], live, "#general")
    assert before == tuple(events[150:250]) and no_gap is None
    assert after[:10] == tuple(events[:10]) and gap is not None and len(after) + gap.size == 250
    assert window_events(after, 5, 10, gap=gap) == window_events(events[:250], 5, 10)
    assert window_events(before, 5, 10)[0][:5] == tuple(events[150:155])  # the previous view's "first 5"


def test_the_headline_compares_each_row_to_the_anchor() -> None:
    found = {
        row: {"usd_per_1k_drafts": 10.0 + n, "cache_write_per_draft": 100.0 * n} for n, row in enumerate(LONG_ROWS)
    }
    out = long_headline(found)
    anchor = found[LONG_ROWS[-1]]["usd_per_1k_drafts"]
    assert out["cost_long_sonnet_4d_tinytroupe_usd_per_1k_drafts"] == anchor
    assert (
        out["cost_long_sonnet_4d_staged_hopping_after_vs_tinytroupe"]
        == found[("staged", "hopping", "after")]["usd_per_1k_drafts"] / anchor
    )
    assert out["cost_long_sonnet_4d_parallel_sliding_before_cache_write_per_draft"] == 0.0
