"""Trajectory windows: which events of a history a judge sees (the first ``first_n`` and the recent ones).

Two shapes, both keeping the first ``first_n`` events and an omission between them and the recent part:

- **sliding** (TinyTroupe's): the last ``last_n`` events; the window moves with every new event, so no two
  consecutive checks of a conversation render the same beginning past the first events;
- **hopping**: every event since an anchor that moves in whole steps of ``last_n`` (the omitted events always
  number a multiple of ``last_n``), so the judge sees at least the last ``last_n`` events and at most
  ``2 * last_n - 1``, and between two moves of the anchor each check's trajectory extends the previous one
  (append-only: a provider's prompt cache serves it, docs/gate-design.md "Judge cost"). It shows a superset
  of the sliding window of the same sizes.
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.errors import ConfigurationError
from engine.models import Event


def window_events(
    events: Sequence[Event], first_n: int, last_n: int, *, hopping: bool = False
) -> tuple[tuple[Event, ...], int, int]:
    """Keep the first ``first_n`` events and the recent ones: returns (events, first_part, omitted).

    Sliding keeps the last ``last_n``; ``hopping`` keeps every event after the first ``first_n`` and the
    ``omitted`` ones, where ``omitted`` is the largest multiple of ``last_n`` leaving at least ``last_n`` recent
    events. A history no longer than ``first_n + last_n`` is returned whole (``omitted == 0``), so no event is
    ever repeated; with ``last_n == 0`` both shapes keep the first ``first_n`` events only.
    """
    if first_n < 0 or last_n < 0:
        raise ConfigurationError(f"first_n and last_n must be >= 0, not {first_n} and {last_n}")
    total = len(events)
    if total <= first_n + last_n:
        return tuple(events), total, 0
    omitted = total - first_n - last_n
    if hopping and last_n:
        omitted = omitted // last_n * last_n
        if omitted == 0:
            return tuple(events), total, 0
    head = tuple(events[:first_n])
    return head + tuple(events[first_n + omitted :]), first_n, omitted
