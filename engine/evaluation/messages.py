"""Conversation input for offline evaluation: JSONL files and the :class:`MessageSource` protocol.

A conversation file holds one JSON object per line::

    {"agent_id": "dwight", "agent_name": "Dwight Schrute", "channel": "general",
     "kind": "action", "text": "Bears. Beets. Battlestar Galactica.", "ts": "2024-05-02T09:14:00Z"}

- ``agent_id`` (required) and ``text`` (required, a string); ``agent_name`` defaults to ``agent_id``;
- ``channel`` is optional (events without one share the channel ``None``);
- ``kind`` is ``action`` (a message the agent sent; the default) or ``stimulus`` (something agents
  received). A stimulus *with* a ``source`` is addressed to ``agent_id`` alone and ``source`` names its
  sender. A stimulus *without* one is a broadcast: ``agent_id``/``agent_name`` name the sender (a
  facilitator, say) and every agent of the channel receives it. Broadcasts become events addressed to
  the channel (``agent_id`` = the channel, or :data:`BROADCAST` without one; ``source`` = the sender);
- ``ts`` is an ISO-8601 timestamp (a time zone is assumed to be UTC when absent) or epoch seconds.

Blank lines are ignored. Events keep the file order. Every malformed line is reported as
``FILE:LINE: field: message``; the caller decides whether to skip those lines or to stop.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from engine.errors import ConfigurationError, FileIssue
from engine.models import Event, EventKind

_ALLOWED_KEYS = frozenset({"agent_id", "agent_name", "channel", "kind", "text", "ts", "source"})
_OPTIONAL_STRINGS = ("agent_name", "channel", "source")
#: The recipient id of a broadcast stimulus that has no channel.
BROADCAST = "*"


class MessageFileError(ConfigurationError):
    """A conversation file has malformed lines (one ``FILE:LINE: message`` per line of the message)."""

    def __init__(self, issues: Sequence[FileIssue]) -> None:
        self.issues = tuple(issues)
        super().__init__("\n".join(str(issue) for issue in self.issues))


@dataclass(frozen=True, slots=True)
class ParsedMessages:
    """The valid events of a conversation file and the issues of the lines that were not."""

    events: tuple[Event, ...]
    issues: tuple[FileIssue, ...]


@runtime_checkable
class MessageSource(Protocol):
    """Where evaluation reads conversations from (a JSONL file, the Postgres message store, ...).

    ``agent_ids`` None means every agent; ``run_id`` / ``since`` narrow the conversation. A source must
    return the events of the requested agents *and* every other event of the channels they took part in:
    environment-level dimensions judge whole channels.
    """

    async def events(
        self, agent_ids: Sequence[str] | None, run_id: str | None, since: datetime | None
    ) -> list[Event]: ...


def parse_timestamp(value: Any) -> datetime:
    """An aware datetime from ISO-8601 text or epoch seconds (naive values are taken as UTC)."""
    if isinstance(value, bool):
        raise ValueError("must be an ISO-8601 timestamp or epoch seconds, not a boolean")
    if isinstance(value, int | float):
        try:
            return datetime.fromtimestamp(value, tz=UTC)
        except (OverflowError, OSError, ValueError):
            raise ValueError(f"epoch seconds {value!r} are out of range") from None
    if not isinstance(value, str):
        raise ValueError("must be an ISO-8601 timestamp or epoch seconds")
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00") if value.endswith("Z") else value)
    except ValueError:
        raise ValueError(f"{value!r} is not an ISO-8601 timestamp") from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


class _FieldError(ValueError):
    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(message)


def _required_text(record: dict[str, Any], key: str, *, allow_empty: bool) -> str:
    if key not in record:
        raise _FieldError(key, "required key is missing")
    value = record[key]
    if not isinstance(value, str):
        raise _FieldError(key, f"must be a string, not {type(value).__name__}")
    if not allow_empty and not value.strip():
        raise _FieldError(key, "must not be empty")
    return value


def _optional(record: dict[str, Any], key: str) -> str | None:
    value = record.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise _FieldError(key, f"must be a string, not {type(value).__name__}")
    return value or None


def event_from_record(record: Any) -> Event:
    """One :class:`Event` from a decoded JSON value; raises ``_FieldError`` naming the bad field."""
    if not isinstance(record, dict):
        raise _FieldError("", f"each line must be a JSON object, not {type(record).__name__}")
    unknown = sorted(set(record) - _ALLOWED_KEYS)
    if unknown:
        raise _FieldError(unknown[0], f"unknown key; allowed keys: {', '.join(sorted(_ALLOWED_KEYS))}")
    agent_id = _required_text(record, "agent_id", allow_empty=False)
    text = _required_text(record, "text", allow_empty=True)
    optional = {key: _optional(record, key) for key in _OPTIONAL_STRINGS}
    kind_value = record.get("kind", EventKind.ACTION.value)
    if kind_value not in {k.value for k in EventKind}:
        raise _FieldError("kind", f"must be 'action' or 'stimulus', not {kind_value!r}")
    ts = None
    if record.get("ts") is not None:
        try:
            ts = parse_timestamp(record["ts"])
        except ValueError as exc:
            raise _FieldError("ts", str(exc)) from None
    name = optional["agent_name"] or agent_id
    kind, channel, source = EventKind(kind_value), optional["channel"], optional["source"]
    if kind is EventKind.STIMULUS and source is None:
        return Event(channel or BROADCAST, channel or "everyone", text, kind, channel, name, ts)
    return Event(agent_id, name, text, kind, channel, source, ts)


def is_broadcast(event: Event) -> bool:
    """True for a stimulus addressed to a whole channel (see the module docstring)."""
    return event.kind is EventKind.STIMULUS and event.agent_id == (event.channel or BROADCAST)


def parse_lines(lines: Sequence[str], file: str) -> ParsedMessages:
    """Parse conversation lines; 1-based line numbers in the issues."""
    events: list[Event] = []
    issues: list[FileIssue] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            events.append(event_from_record(json.loads(line)))
        except json.JSONDecodeError as exc:
            issues.append(FileIssue(file, number, "", f"not valid JSON: {exc.msg} (column {exc.colno})"))
        except _FieldError as exc:
            issues.append(FileIssue(file, number, exc.field, str(exc)))
    return ParsedMessages(tuple(events), tuple(issues))


def read_messages(path: Path, *, skip_invalid: bool = False) -> ParsedMessages:
    """Read a conversation file. Malformed lines raise :class:`MessageFileError` unless ``skip_invalid``."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigurationError(f"{path}: no such conversation file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"{path}: cannot read the conversation file: {exc}") from None
    parsed = parse_lines(text.splitlines(), str(path))
    if parsed.issues and not skip_invalid:
        raise MessageFileError(parsed.issues)
    if not parsed.events:
        raise ConfigurationError(f"{path}: the conversation holds no valid event")
    return parsed


@dataclass(frozen=True)
class StaticMessageSource:
    """A :class:`MessageSource` over events already in memory (a parsed JSONL file, a synthetic run).

    ``run_id`` is ignored (files hold one conversation); ``since`` drops events older than it (events
    without a timestamp are kept); ``agent_ids`` is not used to filter, since channels need every event.
    """

    all_events: tuple[Event, ...]

    async def events(self, agent_ids: Sequence[str] | None, run_id: str | None, since: datetime | None) -> list[Event]:
        if since is None:
            return list(self.all_events)
        return [e for e in self.all_events if e.ts is None or e.ts >= since]
