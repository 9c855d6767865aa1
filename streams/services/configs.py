"""Per-agent configuration in a running worker: a cache over ``agent_evaluation_config``.

Changes reach the cache two ways, so ``drift config set`` takes effect within 2 s without a restart:
records on the ``agent-config`` topic (immediate) and a poll of ``updated_at`` every second (covers
partitions this worker does not own and missed records). Unknown agents are registered on first sight; the
default row a registration (or a sink storing an agent's first message) creates is not a change and never
replaces a configuration announced on the topic.

A worker's cache starts *unloaded* (``wait_for_store=True``): it hands out nothing the gate may decide on until
:meth:`ConfigCache.load` has read every stored configuration, so an agent known to the store never gets the
defaults (the gate awaits :meth:`ConfigCache.wait_loaded` before its first decision). After that, a failed
refresh keeps the last known configurations.
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
    def __init__(
        self, store: Store | None, *, default: AgentConfig | None = None, wait_for_store: bool = False
    ) -> None:
        self._store = store
        self._default = default or AgentConfig()
        self._configs: dict[str, AgentConfig] = {}
        self._names: dict[str, str | None] = {}
        self._pending_registration: dict[str, str | None] = {}
        self._announced: set[str] = set()  # agents whose configuration came on the topic (see apply)
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

    def attach(self, store: Store) -> None:
        """Use ``store`` from now on (the worker connects to the database after the cache is built)."""
        self._store = store

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
        """A configuration announced on the ``agent-config`` topic. A default row the store gains later for the
        agent (registered on first sight by this cache or by a sink) does not replace it; a stored change does."""
        self._configs[agent_id] = config
        self._announced.add(agent_id)

    def note_agent(self, agent_id: str, agent_name: str | None) -> None:
        if agent_id not in self._configs:
            self.get(agent_id, agent_name)

    async def load(self) -> int:
        """Read every stored configuration (errors propagate: the caller retries) and mark the cache loaded.
        Defaults handed out before (to agents only seen so far) are replaced by what the store holds."""
        if self._store is None:
            raise RuntimeError("ConfigCache.load needs a store (attach one first)")
        changed, newest = await self._store.configs_changed_since(None)
        for agent_id, config in changed:
            self._configs[agent_id] = config
        self._newest = newest
        self._loaded.set()
        log.info("%d agent configuration(s) loaded", len(changed))
        return len(changed)

    async def refresh(self) -> int:
        """Register newly seen agents and pull configurations changed since the last refresh."""
        if self._store is None or not self._loaded.is_set():
            return 0
        pending, self._pending_registration = self._pending_registration, {}
        try:
            if pending:
                await self._store.ensure_agents(pending.items())
            changed, self._newest = await self._store.configs_changed_since(self._newest)
        except Exception as exc:  # the database away (any driver error of it): keep the cached configuration
            if not isinstance(exc, DriftError) and classify(exc) is None:
                raise  # a bug in our code surfaces instead of hiding behind stale configurations
            self._pending_registration.update(pending)
            log.warning("configuration refresh failed (the last known configurations stay in use): %s", exc)
            return 0
        for agent_id, config in changed:
            if agent_id in self._announced and config == self._default:
                continue  # a placeholder row (a registration, a sink's parent row), not a change: keep the topic's
            self._announced.discard(agent_id)
            self._configs[agent_id] = config
        return len(changed)

    async def run_forever(self, interval_s: float = 1.0) -> None:
        while True:
            await self.refresh()
            await asyncio.sleep(interval_s)
