"""Trajectory windows: which events of a history a judge sees (the first ``first_n`` and the recent ones).

Two shapes, both keeping the first ``first_n`` events and an omission between them and the recent part:

- **sliding** (TinyTroupe's): the last ``last_n`` events; the window moves with every new event, so no two
  consecutive checks of a conversation render the same beginning past the first events;
- **hopping**: every event since an anchor that moves in whole steps of ``last_n`` (the omitted events always
  number a multiple of ``last_n``), so the judge sees at least the last ``last_n`` events and at most
  ``2 * last_n - 1``, and between two moves of the anchor each check's trajectory extends the previous one
  (append-only: a provider's prompt cache serves it, docs/gate-design.md "Judge cost"). It shows a superset
  of the sliding window of the same sizes.

A history may have a **gap**: events no longer held (the worker's history view forgets old events of a long
channel in steps, engine/stepped_log.py). The window is then computed over the whole history, gap included, and
shows the events of it that are held: the same events, counts and numbers as over the whole history whenever
its first part lies before the gap and its recent part after it; otherwise the first part stops at the gap and
the recent part starts after it (one omission marker, counting every event not shown).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engine.errors import ConfigurationError
from engine.models import Event


@dataclass(frozen=True, slots=True)
class Gap:
    """``size`` events of a history are no longer held; they came after the first ``at`` held events."""

    at: int
    size: int


def window_events(
    events: Sequence[Event], first_n: int, last_n: int, *, hopping: bool = False, gap: Gap | None = None
) -> tuple[tuple[Event, ...], int, int]:
    """Keep the first ``first_n`` events and the recent ones: returns (events, first_part, omitted).

    Sliding keeps the last ``last_n``; ``hopping`` keeps every event after the first ``first_n`` and the
    ``omitted`` ones, where ``omitted`` is the largest multiple of ``last_n`` leaving at least ``last_n`` recent
    events. A history no longer than ``first_n + last_n`` is returned whole (``omitted == 0``), so no event is
    ever repeated; with ``last_n == 0`` both shapes keep the first ``first_n`` events only. ``events`` with a
    ``gap`` are the held ones: see the module's text.
    """
    if first_n < 0 or last_n < 0:
        raise ConfigurationError(f"first_n and last_n must be >= 0, not {first_n} and {last_n}")
    if gap is not None and gap.size > 0:
        return _across(events, first_n, last_n, hopping, gap)
    return _window(events, first_n, last_n, hopping)


def _across(
    events: Sequence[Event], first_n: int, last_n: int, hopping: bool, gap: Gap
) -> tuple[tuple[Event, ...], int, int]:
    """The window over the whole history (``gap.size`` events missing after the first ``gap.at`` held)."""
    at = min(max(gap.at, 0), len(events))
    omitted = len(events) + gap.size - first_n - last_n
    if hopping and last_n and omitted > 0:
        omitted = omitted // last_n * last_n
    if omitted <= 0:  # the window would show the whole history: every held event, the gap as the omission
        return tuple(events), at, gap.size
    first, start = min(first_n, at), max(first_n + omitted, at + gap.size)  # start: of the recent part
    return tuple(events[:first]) + tuple(events[start - gap.size :]), first, start - first


def _window(events: Sequence[Event], first_n: int, last_n: int, hopping: bool) -> tuple[tuple[Event, ...], int, int]:
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
