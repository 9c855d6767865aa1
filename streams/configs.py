"""Per-agent configuration in a running worker: a cache over ``agent_evaluation_config``.

Changes reach the cache two ways, so ``drift config set`` takes effect within 2 s without a restart:
records on the ``agent-config`` topic (immediate) and a poll of ``updated_at`` every second (covers
partitions this worker does not own and missed records). Unknown agents are registered on first sight.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime

from engine.errors import DriftError
from engine.models import AgentConfig
from streams.store import Store
from streams.store_errors import classify

log = logging.getLogger(__name__)


class ConfigCache:
    def __init__(self, store: Store | None, *, default: AgentConfig | None = None) -> None:
        self._store = store
        self._default = default or AgentConfig()
        self._configs: dict[str, AgentConfig] = {}
        self._names: dict[str, str | None] = {}
        self._pending_registration: dict[str, str | None] = {}
        self._newest: datetime | None = None

    def attach(self, store: Store) -> None:
        """Use ``store`` from now on (the worker connects to the database after the cache is built)."""
        self._store = store

    def get(self, agent_id: str, agent_name: str | None = None) -> AgentConfig:
        config = self._configs.get(agent_id)
        if config is None:
            config = self._default
            self._configs[agent_id] = config
            self._pending_registration[agent_id] = agent_name
        return config

    def apply(self, agent_id: str, config: AgentConfig) -> None:
        self._configs[agent_id] = config

    def note_agent(self, agent_id: str, agent_name: str | None) -> None:
        if agent_id not in self._configs:
            self.get(agent_id, agent_name)

    async def refresh(self) -> int:
        """Register newly seen agents and pull configurations changed since the last refresh."""
        if self._store is None:
            return 0
        pending, self._pending_registration = self._pending_registration, {}
        try:
            if pending:
                await self._store.ensure_agents(pending.items())
            changed, self._newest = await self._store.configs_changed_since(self._newest)
        except Exception as exc:  # the database away (any driver error of it): keep the cached configuration
            if not isinstance(exc, DriftError) and classify(exc) is None:
                raise
            self._pending_registration.update(pending)
            log.warning("configuration refresh failed: %s", exc)
            return 0
        for agent_id, config in changed:
            self._configs[agent_id] = config
        return len(changed)

    async def run_forever(self, interval_s: float = 1.0) -> None:
        while True:
            await self.refresh()
            await asyncio.sleep(interval_s)
