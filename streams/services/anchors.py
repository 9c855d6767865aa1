"""The judge's own monitor: a frozen anchor set re-scored by the live judge at a steady interleave.

The anchor set is the label file of ``drift eval calibrate`` (``DRIFT_MONITOR_ANCHORS``: human scores are
the references) or, without one, a fixed sample of committed gate messages whose first judge scores become
their references. Every ``DRIFT_MONITOR_ANCHOR_INTERVAL_S`` a worker re-scores the least recently scored
anchor — as long as its anchor calls stay under ``DRIFT_MONITOR_ANCHOR_SHARE`` of its gate judge calls, on the
evaluations' share of the judge budget — and feeds the gap (judge score minus reference) to the anchor
stream of that dimension. The items do not change, so when the gap moves, the judge moved: the anchor
detector's alarm makes the dimension's alerts of the guard window the judge's (:mod:`engine.monitor`).
Anchor calls are counted apart (``anchor_calls``, ``anchor_tokens`` in ``/stats``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from engine.errors import ConfigurationError, DriftError
from engine.evaluation.calibration import read_labels
from engine.evaluation.messages import event_from_record
from engine.evaluation.run import evaluate_agent
from engine.judges.base import Judge
from engine.models import Dimension
from engine.monitor.policy import ANCHOR_AGENT
from engine.monitor.stream import Source
from engine.settings import Settings
from streams.services.monitor import MonitorService, Observation
from streams.services.stats import GateStats
from streams.store import Store

log = logging.getLogger(__name__)
#: The anchor detector's tolerated gap shift (points) and level: the items are fixed, so their gap is steady.
ANCHOR_MIN_SHIFT = 0.5
ANCHOR_ALPHA = 0.01


AnchorRow = tuple[str, str, str, list[dict[str, Any]], float | None, str]


def label_anchors(path: Path) -> list[AnchorRow]:
    """Anchor rows from a label file (raises :class:`ConfigurationError` with FILE:LINE when it is bad)."""
    rows: list[AnchorRow] = []
    for item in read_labels(path):
        events = [{"agent_id": e.agent_id, "agent_name": e.agent_name, "text": e.text, "kind": e.kind.value,
                   "channel": e.channel, "source": e.source} for e in item.events]  # fmt: skip
        rows.append((f"labels:{path.name}:{item.line}", item.dimension.value, item.agent_id, events,
                     float(item.label), "labels"))  # fmt: skip
    return rows


class AnchorService:
    """Seeds the anchor set once, then re-scores one anchor per interval while the share allows."""

    def __init__(
        self,
        settings: Settings,
        store: Callable[[], Awaitable[Store]],
        judge: Judge,
        monitor: MonitorService,
        stats: GateStats,
    ) -> None:
        self.settings, self.store, self.judge, self.monitor, self.stats = settings, store, judge, monitor, stats
        self.calls = 0
        self.tokens = 0

    def due(self) -> bool:
        """Another anchor call keeps them within their share of this worker's judge calls."""
        return self.calls + 1 <= self.settings.monitor_anchor_share * self.stats.judge_calls

    async def seed(self, store: Store) -> bool:
        """Fill the anchor set if it is empty; True once it holds anchors."""
        if self.settings.monitor_anchors:
            await store.add_anchors(label_anchors(Path(self.settings.monitor_anchors)))
            return True
        dimensions = await store.gated_dimensions()
        return bool(dimensions) and await store.sample_anchors(dimensions) > 0

    async def run(self) -> None:
        """Until cancelled (a worker task); returns at once when the anchors are off (share 0)."""
        if self.settings.monitor_anchor_share <= 0:
            return
        seeded = False
        while True:
            await asyncio.sleep(self.settings.monitor_anchor_interval_s)
            store = await self.store()
            seeded = seeded or await self.seed(store)
            if seeded and self.due():
                await self.score_one(store)

    async def score_one(self, store: Store) -> None:
        item = await store.next_anchor()
        if item is None:
            return
        self.calls += 1
        dimension = Dimension(item["dimension"])
        try:
            events = tuple(event_from_record(r) for r in item["events"])
            result = await evaluate_agent(self.judge, item["agent_id"], events, [dimension],
                                          self.settings.propositions_dir)  # fmt: skip
        except (DriftError, ValueError) as exc:
            log.warning("monitor: anchor %s not scored: %s", item["id"], exc)
            return
        self.tokens += sum(result.run.token_usage.as_dict().values())
        score = result.run.score(dimension).score
        if item["reference"] is None:
            await store.set_anchor_reference(item["id"], score)
            return
        gap = score - float(item["reference"])
        now = datetime.now(UTC)
        await self.monitor.apply([Observation(ANCHOR_AGENT, dimension.value, Source.ANCHOR, gap, now, "", 0, 0)])


def check_anchor_file(settings: Settings) -> None:
    """Refuse a configured anchor file that does not parse, before the worker starts (one line, exit 2)."""
    if settings.monitor_anchors:
        try:
            label_anchors(Path(settings.monitor_anchors))
        except ConfigurationError as exc:
            raise ConfigurationError(f"DRIFT_MONITOR_ANCHORS: {exc}") from None
