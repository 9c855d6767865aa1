"""A stream's policy from the agent's configuration and golden baseline; alert identities.

``monitor_reference: baseline`` uses the agent's golden baseline score for the dimension when the baseline
exists, has that dimension and was made by the judge now scoring (a baseline made by another judge measured
something else, as the regression harness says); otherwise, and with ``first-n``, the stream's first
``reference_n`` observations are its reference. Anchor streams are judge-minus-reference gaps in ``[-9, 9]``
whose reference is 0 (no gap).
"""

from __future__ import annotations

import uuid

from engine.evaluation.baseline import Baseline
from engine.models import AgentConfig, Dimension
from engine.monitor.stream import Source, StreamPolicy

#: The namespace of alert ids: the same stream alerting at the same observation always gets the same id.
_ALERTS = uuid.UUID("5b0c3c86-54a4-4c55-9d6f-8d4f7d0c2a11")
#: The agent id under which the anchor streams are kept (one per dimension).
ANCHOR_AGENT = "*anchors*"


def stream_policy(
    config: AgentConfig, dimension: str, *, reference_n: int, baseline: Baseline | None, judge: str
) -> StreamPolicy:
    """The detector policy of one (agent, dimension) stream."""
    reference = None
    if config.monitor_reference == "baseline" and baseline is not None and baseline.judge == judge:
        try:
            entry = baseline.dimensions.get(Dimension(dimension))
        except ValueError:
            entry = None
        reference = None if entry is None else min(max(entry.score, 0.0), 9.0)
    return StreamPolicy(config.monitor_alpha, config.monitor_min_shift, reference_n, reference)


def anchor_policy(alpha: float, min_shift: float) -> StreamPolicy:
    """An anchor stream: judge score minus the item's reference score, in [-9, 9], reference 0."""
    return StreamPolicy(alpha, min_shift, 0, 0.0, -9.0, 9.0)


def alert_id(scope: str, agent_id: str, dimension: str, source: Source, observation: int) -> str:
    """A deterministic id: a redelivered observation raises the same alert, which the alert table then keeps
    once. ``scope`` is the monitor's consumer group (one per topic prefix)."""
    return str(uuid.uuid5(_ALERTS, f"{scope}\x1f{agent_id}\x1f{dimension}\x1f{source.value}\x1f{observation}"))
