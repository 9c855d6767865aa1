"""The hand-over benchmark's figures from recorded traffic (no stack): each event's window, moved and unmoved."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from engine.settings import Settings
from ops.bench import handover
from ops.bench.handover import Traffic, results
from ops.bench.handover_check import post_mortem, ranges


def _found(traffic: Traffic, events: list[dict[str, Any]]) -> dict[str, Any]:
    return {"post_mortem": {}, "floor": {"leave": [4.0], "join": [4.0], "kill": [9.3]},
            "fresh": {"ready_s": 6.0, "phases": {}}, "join_idle_s": 7.0, "events": events,
            "traffic": traffic}  # fmt: skip


def test_an_events_window_ends_where_the_next_event_starts() -> None:
    traffic = Traffic()
    for n in range(600):  # 10 drafts/s for 60 s over partitions 0-2, each answered 0.1 s later
        sent = n / 10
        traffic.sent[f"d{n}"] = (sent, n % 3)
        traffic.answered[f"d{n}"] = sent + 0.1
    traffic.answered["d201"] = 20.1 + 9.0  # partition 0, sent 0.1 s after the stop: waited 9 s
    traffic.answered["d302"] = 30.2 + 7.0  # partition 2, after the join
    traffic.answered["d360"] = 36.0 + 30.0  # partition 0, after the kill: the kill's, never the join's
    del traffic.answered["d599"]  # still unanswered at the end
    events = [
        {"event": "stop", "at": 20.0, "moved": [0], "exit_s": 0.5, "left_s": 0.35},
        {"event": "join", "at": 25.0, "moved": [2], "ready_s": 3.0},  # its window would reach 40 s
        {"event": "kill", "at": 35.0, "moved": [0], "exit_s": 0.1},
        {"event": "stop_follower", "at": 55.0, "moved": [1], "exit_s": 0.4, "left_s": 0.05},
    ]
    figures = results(_found(traffic, events), Settings())
    assert figures["handover_stop_moved_max_s"] == 9.0 and figures["handover_stop_unmoved_max_s"] == 0.1
    assert figures["handover_join_moved_max_s"] == 7.0
    assert figures["handover_join_unmoved_max_s"] == 0.1  # the kill's straggler is not the join's
    assert figures["handover_kill_moved_max_s"] == 30.0 and figures["handover_kill_normal_p50_s"] == 0.1
    assert figures["handover_stop_follower_moved_max_s"] == 0.1
    assert figures["handover_stop_follower_exit_s"] == 0.4 and figures["worker_join_ready_streaming_s"] == 3.0
    assert figures["handover_unanswered"] == 1 and figures["handover_drafts"] == 600
    assert figures["handover_stop_left_group_s"] == 0.35 and figures["handover_stop_follower_left_group_s"] == 0.05
    assert "handover_kill_left_group_s" not in figures  # a killed worker says nothing


async def test_the_drain_waits_while_verdicts_arrive_and_ends_when_they_stop() -> None:
    """A backlog draining slowly is waited for; a gate that answers nothing more ends the wait early."""
    traffic = Traffic()
    traffic.sent = {f"d{n}": (0.0, 0) for n in range(10)}

    async def answer_slowly() -> None:
        for n in range(8):  # one verdict every 0.1 s for 0.8 s, then silence: d8 and d9 are never answered
            await asyncio.sleep(0.1)
            traffic.answered[f"d{n}"] = time.monotonic()

    answering = asyncio.ensure_future(answer_slowly())
    started = time.monotonic()
    await handover._drain(traffic, quiet_s=0.3, poll_s=0.01)
    await answering
    assert len(traffic.answered) == 8  # it waited well past quiet_s while verdicts kept coming
    assert traffic.unanswered(time.monotonic()) == 2
    assert time.monotonic() - started < 5.0  # and gave up once none came for quiet_s


async def test_the_post_mortem_names_the_offsets_of_the_unanswered_drafts_as_ranges() -> None:
    assert ranges([9, 3, 5, 4, 12, 11]) == "3..5, 9, 11..12" and ranges([]) == ""
    traffic = Traffic(sent={"a": (0.0, 1)}, answered={"a": 0.2}, offsets={"a": 7})
    assert await post_mortem(Settings.from_env(), traffic, 3) == {}  # all answered: no broker asked


def test_the_start_and_stop_lines_are_read_from_the_workers_log(tmp_path: Any) -> None:
    from types import SimpleNamespace

    log = tmp_path / "worker.log"
    log.write_text(
        "noise\n"
        "drift: worker started in 2.80 s: group join 2.03 s, store 0.77 s; cpu 0.70 s\n"
        "drift: worker stopped in 0.45 s: tables 0.01 s, agents 0.00 s, group leave 0.31 s, rest 0.13 s\n"
    )
    worker: Any = SimpleNamespace(log_path=log)
    assert handover.startup_phases(worker) == {"total": 2.8, "cpu": 0.7, "group join": 2.03, "store": 0.77}
    assert handover.stop_phases(worker) == {
        "total": 0.45,
        "tables": 0.01,
        "agents": 0.0,
        "group leave": 0.31,
        "rest": 0.13,
    }
    empty = tmp_path / "empty.log"
    empty.write_text("drift: worker started in 1.00 s: store 1.00 s; cpu 0.50 s\n")  # killed: no stop line
    killed: Any = SimpleNamespace(log_path=empty)
    assert handover.stop_phases(killed) == {}
