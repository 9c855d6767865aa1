"""Per-agent configuration in a running worker: a cache over ``agent_evaluation_config``.

Changes reach the cache two ways, so ``drift config set`` takes effect within 2 s without a restart:
records on the ``agent-config`` topic (immediate) and a poll of ``updated_at`` every second (covers
partitions this worker does not own and missed records). Unknown agents are registered on first sight.

The cache holds no store: the worker passes its store to :meth:`ConfigCache.load` and
:meth:`ConfigCache.refresh` once the database is open. A worker's cache starts *unloaded*
(``wait_for_store=True``): it hands out nothing the gate may decide on until :meth:`ConfigCache.load` has read
every stored configuration, so an agent known to the store never gets the defaults (the gate awaits
:meth:`ConfigCache.wait_loaded` before its first decision). After that, a failed refresh keeps the last known
configurations.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime

from engine.errors import DriftError
from engine.models import AgentConfig
from streams.store import Store
from streams.store.errors import classify

log = logging.getLogger(__name__)


class ConfigCache:
    def __init__(self, *, default: AgentConfig | None = None, wait_for_store: bool = False) -> None:
        self._default = default or AgentConfig()
        self._configs: dict[str, AgentConfig] = {}
        self._names: dict[str, str | None] = {}
        self._pending_registration: dict[str, str | None] = {}
        self._newest: datetime | None = None
        self._loaded = asyncio.Event()
        if not wait_for_store:
            self._loaded.set()  # a cache without a database (tests, offline tools): the defaults are the truth

    @property
    def loaded(self) -> bool:
        """True once the stored configurations are in (always, for a cache that does not wait for a store)."""
        return self._loaded.is_set()

    async def wait_loaded(self) -> None:
        await self._loaded.wait()

    def get(self, agent_id: str, agent_name: str | None = None) -> AgentConfig:
        """The agent's configuration; the defaults for an agent the store does not know (registered on the next
        refresh). Decide nothing on it before :attr:`loaded`."""
        config = self._configs.get(agent_id)
        if config is None:
            config = self._default
            self._configs[agent_id] = config
            self._pending_registration[agent_id] = agent_name
        return config

    def known(self, agent_id: str) -> AgentConfig | None:
        """The configuration this worker holds for ``agent_id``, or None (read-only: registers nothing)."""
        return self._configs.get(agent_id)

    def apply(self, agent_id: str, config: AgentConfig) -> None:
        self._configs[agent_id] = config

    def note_agent(self, agent_id: str, agent_name: str | None) -> None:
        if agent_id not in self._configs:
            self.get(agent_id, agent_name)

    async def load(self, store: Store) -> int:
        """Read every stored configuration of ``store`` (errors propagate: the caller retries) and mark the cache
        loaded. Defaults handed out before (to agents only seen so far) are replaced by what the store holds."""
        changed, newest = await store.configs_changed_since(None)
        for agent_id, config in changed:
            self._configs[agent_id] = config
        self._newest = newest
        self._loaded.set()
        log.info("%d agent configuration(s) loaded", len(changed))
        return len(changed)

    async def refresh(self, store: Store) -> int:
        """Register newly seen agents in ``store`` and pull configurations changed since the last refresh."""
        if not self._loaded.is_set():
            return 0
        pending, self._pending_registration = self._pending_registration, {}
        try:
            if pending:
                await store.ensure_agents(pending.items())
            changed, self._newest = await store.configs_changed_since(self._newest)
        except Exception as exc:  # the database away (any driver error of it): keep the cached configuration
            if not isinstance(exc, DriftError) and classify(exc) is None:
                raise  # a bug in our code surfaces instead of hiding behind stale configurations
            self._pending_registration.update(pending)
            log.warning("configuration refresh failed (the last known configurations stay in use): %s", exc)
            return 0
        for agent_id, config in changed:
            self._configs[agent_id] = config
        return len(changed)
