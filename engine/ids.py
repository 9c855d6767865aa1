"""The one rule for identifiers a user or an orchestrator chooses (agent ids above all).

An id is 1 to :data:`MAX_ID_CHARS` characters (the wire payloads' limit, ``streams.wire.payloads``) with no control
character: PostgreSQL ``text`` cannot hold NUL, and a line break in an id would split the one-line messages
the CLI prints. Anything else (spaces, dots, non-ASCII letters) is allowed, as on the wire.
"""

from __future__ import annotations

import unicodedata

from engine.errors import ConfigurationError

MAX_ID_CHARS = 128
_SHOWN_CHARS = 40


def id_problem(value: str) -> str | None:
    """Why ``value`` is not a valid id, or None when it is."""
    if not value:
        return "must not be empty"
    if len(value) > MAX_ID_CHARS:
        return f"must be at most {MAX_ID_CHARS} characters, got {len(value)}"
    for index, char in enumerate(value):
        if unicodedata.category(char) == "Cc":
            return f"must not contain control characters (U+{ord(char):04X} at position {index})"
    return None


def shown(value: str) -> str:
    """``value`` quoted and cut for a one-line message."""
    cut = value[:_SHOWN_CHARS]
    return repr(cut) + ("…" if len(value) > _SHOWN_CHARS else "")


def check_agent_id(value: str) -> str:
    """``value`` when it is a valid agent id; a one-line :class:`ConfigurationError` otherwise."""
    problem = id_problem(value)
    if problem is not None:
        raise ConfigurationError(f"agent id {shown(value)} {problem}")
    return value
