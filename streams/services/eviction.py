"""Idle eviction: a worker's memory follows its active agents and its live drafts, not everything it ever saw.

Every :func:`sweep interval <sweep_interval>` the :class:`Evictor`:

- drops every agent idle (no draft, committed message or step) for longer than ``DRIFT_AGENT_IDLE_TTL_S``:
  its configuration (read from the store again when it comes back), its ``recent-messages`` entry (so a
  returning agent starts with an empty similarity window), and its events in the history view (dated by their
  ``ts``). An agent with drafts queued or being judged is never dropped: it counts as seen now;
- expires ``pending-attempts`` and ``verdict-records`` entries not written for longer than
  ``DRIFT_PENDING_TTL_S`` (a late attempt is still judged, among the attempts still known; its verdict says
  how many earlier ones it no longer knew, see :mod:`streams.services.gate`);
- sends the tombstones (null-value changelog records) of what it dropped from a table, for the partitions
  this worker is active for, so a restore does not bring the entries back (a standby copy is only dropped
  from memory: its owner writes the tombstone);
- and serves the gauges ``agents_in_memory`` and ``pending_attempts`` (probes of :class:`GateStats`, read at
  each scrape).

Entries restored from a changelog were never seen by this worker: they count as seen at the first sweep after
the restore, so they go one TTL later unless their agent shows up.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engine.settings import Settings
from streams.runtime.eviction import Clock
from streams.runtime.history import HistoryView
from streams.runtime.output import all_delivered
from streams.runtime.supervise import contained
from streams.services.configs import ConfigCache
from streams.services.sinklag import SinkLag
from streams.services.stats import GateStats

if TYPE_CHECKING:
    from streams.runtime.faust_app import DriftApp

log = logging.getLogger(__name__)

MIN_SWEEP_S, MAX_SWEEP_S = 0.25, 10.0


def sweep_interval(settings: Settings) -> float:
    """A quarter of the shorter TTL, between :data:`MIN_SWEEP_S` and :data:`MAX_SWEEP_S`: an entry lives at
    most that much past its TTL."""
    quarter = min(settings.agent_idle_ttl_s, settings.pending_ttl_s) / 4
    return min(max(quarter, MIN_SWEEP_S), MAX_SWEEP_S)


@dataclass
class Swept:
    """What one sweep dropped."""

    agents: list[str] = field(default_factory=list)
    tables: dict[str, list[str]] = field(default_factory=dict)  # table role -> keys given a tombstone or dropped

    def keys(self) -> set[str]:
        return {key for keys in self.tables.values() for key in keys}


@dataclass
class Evictor:
    """Drops the per-agent and per-draft state of one worker past its TTL (see the module docstring).

    ``recent``, ``pending`` and ``verdicts`` are :class:`streams.runtime.tables.DirectTable` s (or anything with
    their ``evict``/``expire``/``adopt``/``local`` methods); ``busy(agent_id)`` says whether drafts of the agent
    are queued or running; ``owned()`` the partitions this worker is active for.
    """

    settings: Settings
    configs: ConfigCache
    view: HistoryView
    recent: Any
    pending: Any
    verdicts: Any
    busy: Callable[[str], bool]
    owned: Callable[[], Collection[int]]
    stats: GateStats
    wall_clock: Clock = time.time

    def __post_init__(self) -> None:
        self.stats.probes["agents_in_memory"] = self.agents_in_memory
        self.stats.probes["pending_attempts"] = self.pending_attempts

    def sweep(self) -> Swept:
        """Drop what is past its TTL (no I/O; the caller flushes the tombstones) and update the gauges."""
        swept = Swept()
        owned = self.owned()
        activity = self.configs.activity
        for key in self.recent.local:
            if key not in activity:  # restored from the changelog: seen now
                activity.touch(key)
        for agent_id in activity.idle(self.settings.agent_idle_ttl_s):
            if self.busy(agent_id):
                activity.touch(agent_id)  # work in flight: never evicted under it
                continue
            self.configs.drop(agent_id)
            swept.agents.append(agent_id)
            if self.recent.evict(agent_id, owned):
                swept.tables.setdefault("recent", []).append(agent_id)
        self.view.drop_idle(self.wall_clock() - self.settings.agent_idle_ttl_s)
        for role, table in (("pending", self.pending), ("verdicts", self.verdicts)):
            table.adopt()
            expired = table.expire(self.settings.pending_ttl_s, owned)
            if expired:
                swept.tables[role] = expired
        return swept

    def agents_in_memory(self) -> int:
        """Distinct agents with any state in this worker (configuration, recent messages, history)."""
        return len(set(self.configs.activity) | set(self.recent.local) | self.view.agents())

    def pending_attempts(self) -> int:
        return len(self.pending.local)


async def sweep_and_flush(evictor: Evictor, flush: Callable[..., Any]) -> Swept:
    """One sweep, then its tombstones on the broker (a failure is logged: the entries stay dropped from memory,
    and a restore before the next write of those keys may bring them back until their TTL passes again)."""
    swept = evictor.sweep()
    keys = swept.keys()
    if keys:
        try:
            await all_delivered(await flush(keys))
        except Exception as exc:  # the broker away: the worker goes on
            log.warning("tombstones of %d evicted key(s) not written: %s", len(keys), exc)
        log.info("evicted %d idle agent(s), %d table entr(ies)", len(swept.agents), len(keys))
    return swept


def install_eviction(app: DriftApp, settings: Settings, evictor: Evictor, flush: Callable[..., Any]) -> None:
    """Add the eviction timer (tombstones sent with ``flush``, the gate's table flush), the restore-time
    measurement and the sinks' lag to the gate ``app``."""

    @app.timer(sweep_interval(settings))  # type: ignore[untyped-decorator]
    @contained("idle eviction sweep")
    async def evict_idle() -> None:
        await sweep_and_flush(evictor, flush)

    _measure_restore(app, evictor.stats)
    lag = SinkLag(settings)

    @app.task  # type: ignore[untyped-decorator]
    async def sink_lag() -> None:
        await lag.run_forever(evictor.stats)


def _measure_restore(app: DriftApp, stats: GateStats) -> None:
    """``table_restore_seconds``: from the last assignment to its tables being ready (Faust's recovery done)."""
    assigned_at: list[float] = []

    async def assigned(sender: Any, *args: Any, **kwargs: Any) -> None:
        assigned_at[:] = [time.monotonic()]

    async def ready(sender: Any, *args: Any, **kwargs: Any) -> None:
        if assigned_at:
            stats.state["table_restore_seconds"] = time.monotonic() - assigned_at.pop()

    app.on_partitions_assigned.connect(assigned)  # type: ignore[arg-type]
    app.on_rebalance_complete.connect(ready)  # type: ignore[arg-type]
