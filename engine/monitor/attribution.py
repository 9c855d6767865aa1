"""Who moved: the agent or the judge. A guard-window rule over the agents' alerts and the anchor detector's.

A provider's silent model update moves every score at once and looks exactly like a cast-wide persona
collapse. Two signals tell them apart:

* the **anchor set** — frozen items with reference scores (human labels, or the judge's own first scores),
  re-scored by the live judge at a steady interleave. Its detector watches judge-minus-reference: when it
  fires, the judge moved.
* the **cast**: when at least ``cast_share`` of the agents monitored on a dimension alert within one guard
  window, one cause for all of them (the judge, or a change to the whole system) is far likelier than that
  many independent drifts.

An agent alert is ``judge`` when either holds within ``guard_s`` before it, ``unknown`` when no anchor set is
configured and the cast rule does not apply, and ``agent`` otherwise. Because the anchor detector may fire
*after* an agent alert it explains, :meth:`Attributor.anchor_fired` and :meth:`Attributor.agent_alert` also
return the earlier alerts of the window whose cause is revised to ``judge`` (the caller re-publishes them).
State is bounded: alerts older than the guard window are dropped.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from enum import StrEnum


class Cause(StrEnum):
    AGENT = "agent"
    JUDGE = "judge"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class AttributionPolicy:
    """The guard window (seconds), the share of the cast that makes an alert the judge's, and its minimum size."""

    guard_s: float = 3600.0
    cast_share: float = 0.5
    min_cast: int = 3


def cast_wide(policy: AttributionPolicy, window_agents: int, cast_size: int) -> bool:
    """True when ``window_agents`` alerting agents are enough of a cast of ``cast_size`` to blame the judge."""
    return cast_size >= policy.min_cast and window_agents >= policy.cast_share * cast_size


def cause_of(
    policy: AttributionPolicy,
    at: float,
    anchors_configured: bool,
    anchor_at: float | None,
    window_agents: int,
    cast_size: int,
) -> Cause:
    """An agent alert's cause at time ``at``: the anchor detector's last alarm (``anchor_at``), the number of
    agents alerting on the dimension within the guard window (this one included) and the monitored cast."""
    if anchor_at is not None and 0 <= at - anchor_at <= policy.guard_s:
        return Cause.JUDGE
    if cast_wide(policy, window_agents, cast_size):
        return Cause.JUDGE
    return Cause.AGENT if anchors_configured else Cause.UNKNOWN


@dataclass(slots=True)
class _Recent:
    at: float
    alert_id: str
    agent_id: str
    cause: Cause


@dataclass(slots=True)
class Attributor:
    """Per dimension: the recent agent alerts and the anchor detector's last alarm."""

    policy: AttributionPolicy
    anchors_configured: bool
    _alerts: dict[str, deque[_Recent]] = field(default_factory=dict)
    _anchor_at: dict[str, float] = field(default_factory=dict)

    def agent_alert(
        self, dimension: str, agent_id: str, alert_id: str, at: float, cast_size: int
    ) -> tuple[Cause, list[str]]:
        """The new alert's cause, and the ids of earlier alerts in the window now revised to ``judge``."""
        recent = self._window(dimension, at)
        agents = len({r.agent_id for r in recent} | {agent_id})
        cause = cause_of(self.policy, at, self.anchors_configured, self._anchor_at.get(dimension), agents, cast_size)
        revised = self._revise(recent) if cause is Cause.JUDGE and cast_wide(self.policy, agents, cast_size) else []
        recent.append(_Recent(at, alert_id, agent_id, cause))
        return cause, revised

    def anchor_fired(self, dimension: str, at: float) -> list[str]:
        """Record the anchor detector's alarm; the ids of the window's alerts now revised to ``judge``."""
        self._anchor_at[dimension] = at
        return self._revise(self._window(dimension, at))

    def _window(self, dimension: str, at: float) -> deque[_Recent]:
        recent = self._alerts.setdefault(dimension, deque())
        while recent and at - recent[0].at > self.policy.guard_s:
            recent.popleft()
        return recent

    @staticmethod
    def _revise(recent: deque[_Recent]) -> list[str]:
        revised = [r.alert_id for r in recent if r.cause is not Cause.JUDGE]
        for r in recent:
            r.cause = Cause.JUDGE
        return revised
