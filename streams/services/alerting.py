"""What surrounds the drift monitor in a worker: each stream's policy, the alert counters and the webhook.

* :class:`MonitorPolicies` — an (agent, dimension) stream's detector policy from the agent's configuration
  (``monitor_*`` keys) and golden baseline, or None when the agent is not monitored;
* :class:`AlertCounts` — ``drift_alerts_total{dimension,cause}`` and the open-alerts gauge;
* :class:`Webhook` — an optional JSON POST per alert (``DRIFT_ALERT_WEBHOOK_URL``) with a Slack-compatible
  ``text`` field, 5 s timeout and three tries, from a bounded queue drained by its own task: a slow or dead
  endpoint never blocks or slows the monitor, let alone the gate (a full queue drops the alert from the
  webhook only, counted and logged). The URL is a secret: no log line carries it.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from engine.errors import ConfigurationError
from engine.evaluation.baseline import Baseline, load_baseline
from engine.models import AgentConfig
from engine.monitor.policy import stream_policy
from engine.monitor.stream import StreamPolicy
from engine.settings import Settings
from streams.services.configs import ConfigCache
from streams.wire.payloads import Alert

if TYPE_CHECKING:
    import httpx

log = logging.getLogger(__name__)
WEBHOOK_QUEUE = 100
WEBHOOK_TRIES = 3
WEBHOOK_TIMEOUT_S = 5.0


class MonitorPolicies:
    """Per stream: the policy from the agent's configuration and golden baseline (read once per agent)."""

    def __init__(self, settings: Settings, configs: ConfigCache, judge_name: str) -> None:
        self.settings, self.configs, self.judge_name = settings, configs, judge_name
        self._baselines: dict[str, Baseline | None] = {}

    async def __call__(self, agent_id: str, dimension: str) -> StreamPolicy | None:
        config = await self.configs.lookup(agent_id) or AgentConfig()
        if not config.monitor_enabled:
            return None
        return stream_policy(config, dimension, reference_n=self.settings.monitor_reference_n,
                             baseline=self._baseline(agent_id), judge=self.judge_name)  # fmt: skip

    def _baseline(self, agent_id: str) -> Baseline | None:
        if agent_id not in self._baselines:
            if len(self._baselines) > 10_000:  # bounded: a long-lived worker sees many agents
                self._baselines.clear()
            try:
                found = load_baseline(Path(self.settings.propositions_dir) / "baselines", agent_id)
            except ConfigurationError as exc:
                log.warning("monitor: %s; %s's streams take their first observations as reference", exc, agent_id)
                found = None
            self._baselines[agent_id] = found
        return self._baselines[agent_id]


class AlertCounts:
    """Alerts raised, by (dimension, cause), and the open alerts (refreshed from the database)."""

    def __init__(self) -> None:
        self.raised: Counter[tuple[str, str]] = Counter()
        self.open = 0
        self.webhook_dropped = 0

    def count(self, alert: Alert) -> None:
        if not alert.revised:
            self.raised[alert.dimension, alert.cause] += 1


def alert_text(alert: Alert) -> str:
    """One readable line for chat tools."""
    verb = "revised to cause" if alert.revised else "cause"
    mean = "" if alert.recent_mean is None else f" to about {alert.recent_mean:.2f}"
    return (
        f"persona-drift: {alert.agent_id} {alert.dimension} ({alert.source}) {alert.direction} from "
        f"{alert.reference:.2f}{mean}; {verb} {alert.cause}; alert {alert.alert_id}"
    )


class Webhook:
    """POST each alert to the configured URL from a bounded queue (see the module docstring)."""

    def __init__(self, url: str, counts: AlertCounts) -> None:
        self._url, self._counts = url, counts
        self._queue: asyncio.Queue[Alert] = asyncio.Queue(WEBHOOK_QUEUE)

    def offer(self, alert: Alert) -> None:
        try:
            self._queue.put_nowait(alert)
        except asyncio.QueueFull:
            self._counts.webhook_dropped += 1
            log.warning("alert webhook: queue full, alert %s not posted", alert.alert_id)

    async def run(self) -> None:
        """Drain the queue until cancelled."""
        import httpx  # with its CLI's rich, a tenth of a worker's start-up: only where a webhook is configured

        async with httpx.AsyncClient(timeout=WEBHOOK_TIMEOUT_S) as client:
            while True:
                alert = await self._queue.get()
                await self._post(client, alert)

    async def _post(self, client: httpx.AsyncClient, alert: Alert) -> None:
        import httpx

        body = {"text": alert_text(alert), "alert": alert.model_dump(mode="json")}
        for attempt in range(1, WEBHOOK_TRIES + 1):
            try:
                response = await client.post(self._url, json=body)
                if response.status_code < 400:
                    return
                reason = f"HTTP {response.status_code}"
            except httpx.HTTPError as exc:
                reason = type(exc).__name__  # never str(exc): it may carry the URL
            if attempt < WEBHOOK_TRIES:
                await asyncio.sleep(0.5 * 2**attempt)
        log.warning("alert webhook: alert %s not posted after %d tries (%s)", alert.alert_id, WEBHOOK_TRIES, reason)
