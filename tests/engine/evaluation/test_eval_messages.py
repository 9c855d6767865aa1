"""Conversation files: parsing, broadcasts, line-numbered issues, skip-invalid, the static source."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from engine.errors import ConfigurationError
from engine.evaluation.messages import (
    BROADCAST,
    MessageFileError,
    MessageSource,
    StaticMessageSource,
    is_broadcast,
    parse_timestamp,
    read_messages,
)
from engine.models import Event, EventKind

JsonlFactory = Callable[..., Path]


def _line(**fields: object) -> dict[str, object]:
    return {"agent_id": "ann", "agent_name": "Ann", "channel": "#general", "kind": "action", "text": "hi", **fields}


def test_valid_lines_become_events_in_file_order(jsonl_file: JsonlFactory) -> None:
    path = jsonl_file(
        [_line(text="first", ts="2025-05-12T09:00:00Z"), "", _line(agent_id="bob", agent_name=None, text="second")]
    )
    parsed = read_messages(path)
    assert [(e.agent_id, e.text) for e in parsed.events] == [("ann", "first"), ("bob", "second")]
    assert parsed.events[0].ts == datetime(2025, 5, 12, 9, 0, tzinfo=UTC)
    assert parsed.events[1].agent_name == "bob"  # defaults to the id when absent from the line
    assert parsed.issues == ()


def test_stimulus_without_source_is_a_broadcast_to_the_channel(jsonl_file: JsonlFactory) -> None:
    path = jsonl_file(
        [
            _line(agent_id="facilitator", agent_name="Facilitator", kind="stimulus", text="Ideas, please"),
            _line(agent_id="ann", kind="stimulus", source="Bob", text="psst"),
            _line(agent_id="facilitator", agent_name="Facilitator", kind="stimulus", channel=None, text="all"),
        ]
    )
    channel_cast, directed, everywhere = read_messages(path).events
    assert (channel_cast.agent_id, channel_cast.source, channel_cast.channel) == ("#general", "Facilitator", "#general")
    assert is_broadcast(channel_cast)
    assert (directed.agent_id, directed.source) == ("ann", "Bob")
    assert not is_broadcast(directed)
    assert everywhere.agent_id == BROADCAST and is_broadcast(everywhere)


def test_malformed_lines_are_reported_with_file_and_line(jsonl_file: JsonlFactory) -> None:
    path = jsonl_file(
        [
            _line(),
            "{not json",
            _line(kind="shout"),
            _line(ts="yesterday"),
            '["a", "list"]',
            _line(agent_id=""),
            _line(text=5),
            _line(colour="red"),
        ]
    )
    with pytest.raises(MessageFileError) as caught:
        read_messages(path)
    messages = str(caught.value).splitlines()
    assert [m.split(": ", 1)[0] for m in messages] == [f"{path}:{n}" for n in range(2, 9)]
    assert "not valid JSON" in messages[0]
    assert "kind" in messages[1] and "'shout'" in messages[1]
    assert "ts" in messages[2] and "ISO-8601" in messages[2]
    assert "JSON object" in messages[3]
    assert "agent_id" in messages[4]
    assert "text: must be a string" in messages[5]
    assert "colour" in messages[6]
    assert isinstance(caught.value, ConfigurationError)


def test_skip_invalid_keeps_the_good_lines_and_the_issues(jsonl_file: JsonlFactory) -> None:
    path = jsonl_file([_line(text="ok"), "garbage", _line(text="also ok")])
    parsed = read_messages(path, skip_invalid=True)
    assert [e.text for e in parsed.events] == ["ok", "also ok"]
    assert [issue.line for issue in parsed.issues] == [2]


def test_a_file_without_any_valid_event_is_a_configuration_error(jsonl_file: JsonlFactory) -> None:
    with pytest.raises(ConfigurationError, match="no valid event"):
        read_messages(jsonl_file(["garbage"]), skip_invalid=True)


def test_missing_file_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="no such conversation file"):
        read_messages(tmp_path / "absent.jsonl")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2025-05-12T09:00:00Z", datetime(2025, 5, 12, 9, tzinfo=UTC)),
        ("2025-05-12T11:00:00+02:00", datetime(2025, 5, 12, 9, tzinfo=UTC)),
        ("2025-05-12T09:00:00", datetime(2025, 5, 12, 9, tzinfo=UTC)),
        (0, datetime(1970, 1, 1, tzinfo=UTC)),
    ],
)
def test_timestamps_are_aware(value: object, expected: datetime) -> None:
    assert parse_timestamp(value) == expected


@pytest.mark.parametrize("value", [True, "soon", [1], 1e20])
def test_bad_timestamps_raise_value_error(value: object) -> None:
    with pytest.raises(ValueError):
        parse_timestamp(value)


async def test_static_source_filters_by_since_and_keeps_undated_events() -> None:
    early = Event("ann", "Ann", "early", ts=datetime(2025, 1, 1, tzinfo=UTC))
    late = Event("bob", "Bob", "late", ts=datetime(2025, 6, 1, tzinfo=UTC))
    undated = Event("ann", "Ann", "undated", kind=EventKind.ACTION)
    source = StaticMessageSource((early, late, undated))
    assert isinstance(source, MessageSource)
    assert await source.events(None, None, None) == [early, late, undated]
    assert await source.events(["ann"], None, datetime(2025, 3, 1, tzinfo=UTC)) == [late, undated]


def test_the_sample_conversation_parses_cleanly(sample_events: tuple[Event, ...]) -> None:
    assert len(sample_events) == 41
    assert sum(1 for e in sample_events if is_broadcast(e)) == 2
