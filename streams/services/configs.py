"""Per-agent configuration in a running worker: a cache over ``agent_evaluation_config``.

Changes reach the cache two ways, so ``drift config set`` takes effect within 2 s without a restart:
records on the ``agent-config`` topic (immediate) and a poll of ``updated_at`` every second (covers
partitions this worker does not own and missed records). Unknown agents are registered on first sight; the
default row a registration (or a sink storing an agent's first message) creates is not a change and never
replaces a configuration announced on the topic.

The cache holds the configurations of the agents this worker has seen lately, not of every stored agent:
:attr:`ConfigCache.activity` dates each agent's last draft, message or step, and the idle eviction
(:mod:`streams.services.eviction`) :meth:`drops <ConfigCache.drop>` agents idle beyond
``DRIFT_AGENT_IDLE_TTL_S``. Before the gate or the steps service decides for agents, they
:meth:`ensure <ConfigCache.ensure>` them: the configurations of agents not in memory (new ones, or agents that
come back after eviction) are read from the store in one query, so a returning agent gets its stored
configuration, never the defaults. If that read fails (the database away), they get the defaults and the next
successful refresh replaces them with the stored ones.

The worker passes its store to :meth:`ConfigCache.load` and :meth:`ConfigCache.refresh`; :meth:`ensure
<ConfigCache.ensure>` and :meth:`lookup <ConfigCache.lookup>` reach it through the store port given at
construction (``await store()``, which waits until the worker's database is open). A worker's cache starts
*unloaded* (``wait_for_store=True``): it hands out nothing the gate may decide on until :meth:`ConfigCache.load`
has reached the store and replaced any defaults handed out before with the stored
configurations (the gate awaits :meth:`ConfigCache.wait_loaded` before its first decision). After that, a
failed refresh keeps the last known configurations.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from datetime import datetime

from engine.errors import DriftError
from engine.models import AgentConfig
from streams.runtime.eviction import Clock, LastSeen
from streams.store import Store
from streams.store.errors import classify

log = logging.getLogger(__name__)


class ConfigCache:
    def __init__(
        self,
        store: Callable[[], Awaitable[Store]] | None = None,
        *,
        default: AgentConfig | None = None,
        wait_for_store: bool = False,
        clock: Clock | None = None,
    ) -> None:
        self._store = store
        self._default = default or AgentConfig()
        self._configs: dict[str, AgentConfig] = {}
        self.activity = LastSeen(clock) if clock is not None else LastSeen()
        self._pending_registration: dict[str, str | None] = {}
        self._fetching: set[str] = set()  # agents whose stored configuration is being read
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

    def get(self, agent_id: str, agent_name: str | None = None) -> AgentConfig:
        """The agent's configuration; the defaults for an agent the store does not know (registered on the next
        refresh). Decide nothing on it before :attr:`loaded`."""
        self.activity.touch(agent_id)
        config = self._configs.get(agent_id)
        if config is None:
            config = self._default
            self._configs[agent_id] = config
            self._pending_registration[agent_id] = agent_name
        return config

    async def ensure(self, agent_ids: Iterable[str]) -> None:
        """Read the stored configurations of the agents of ``agent_ids`` not in memory (one query); an agent
        the store does not know gets the defaults from :meth:`get`. A failed read is logged: :meth:`get` then
        hands out the defaults and the next refresh corrects them."""
        missing = {a for a in agent_ids if a not in self._configs and a not in self._fetching}
        if not missing or self._store is None or not self._loaded.is_set():
            return
        self._fetching |= missing
        try:
            stored = await (await self._store()).configs_of(sorted(missing))
        except Exception as exc:
            if not isinstance(exc, DriftError) and classify(exc) is None:
                raise
            log.warning("configurations of %d agent(s) not read (defaults until the next refresh): %s",
                        len(missing), exc)  # fmt: skip
            return
        finally:
            self._fetching -= missing
        for agent_id, config in stored.items():
            if agent_id not in self._configs:  # a change applied meanwhile is newer
                self._configs[agent_id] = config
                self.activity.touch(agent_id)

    async def lookup(self, agent_id: str) -> AgentConfig | None:
        """The configuration the gate would use for ``agent_id`` now: the one held, else the stored one (read
        without keeping it: a lookup is not activity); None when neither exists."""
        held = self._configs.get(agent_id)
        if held is not None or self._store is None or not self._loaded.is_set():
            return held
        return (await (await self._store()).configs_of([agent_id])).get(agent_id)

    def drop(self, agent_id: str) -> None:
        """Forget ``agent_id`` (idle eviction): its configuration is read from the store again on return."""
        self._configs.pop(agent_id, None)
        self._announced.discard(agent_id)
        self.activity.forget(agent_id)

    def known(self, agent_id: str) -> AgentConfig | None:
        """The configuration this worker holds for ``agent_id``, or None (read-only: registers nothing)."""
        return self._configs.get(agent_id)

    def apply(self, agent_id: str, config: AgentConfig) -> None:
        """An ``agent-config`` record: kept, and the agent counts as seen (a configuration published only on the
        topic, as the simulation runner does for its session agents, exists nowhere else; it goes with the agent
        when the agent is evicted). A default row the store gains later for the agent (registered on first sight by
        this cache or by a sink) does not replace it; a stored change does."""
        self._configs[agent_id] = config
        self._announced.add(agent_id)
        self.activity.touch(agent_id)

    def note_agent(self, agent_id: str, agent_name: str | None) -> None:
        """A committed message of ``agent_id``: it is active; an agent not in memory is registered (its
        configuration is read when it drafts, see :meth:`ensure`)."""
        self.activity.touch(agent_id)
        if agent_id not in self._configs:
            self._pending_registration.setdefault(agent_id, agent_name)

    async def load(self, store: Store) -> int:
        """Reach ``store`` (errors propagate: the caller retries), replace the defaults handed out so far with
        the stored configurations and mark the cache loaded; returns how many stored ones were read."""
        newest = await store.configs_newest()
        stored = await store.configs_of(sorted(self._configs)) if self._configs else {}
        self._configs.update(stored)
        self._newest = newest
        self._loaded.set()
        log.info("agent configurations loaded (%d held, the others are read on first sight)", len(self._configs))
        return len(stored)

    async def refresh(self, store: Store) -> int:
        """Register newly seen agents in ``store`` and pull configurations changed since the last refresh."""
        if not self._loaded.is_set():
            return 0
        pending, self._pending_registration = self._pending_registration, {}
        try:
            if pending:
                await store.ensure_agents(pending.items())
                handed = [a for a in pending if a in self._configs]  # defaults handed out: the stored ones now
                stored = await store.configs_of(handed) if handed else {}
                self._configs.update(
                    (a, c) for a, c in stored.items() if a in self._configs and not self._placeholder(a, c)
                )
            changed, self._newest = await store.configs_changed_since(self._newest)
        except Exception as exc:  # the database away (any driver error of it): keep the cached configuration
            if not isinstance(exc, DriftError) and classify(exc) is None:
                raise  # a bug in our code surfaces instead of hiding behind stale configurations
            self._pending_registration.update(pending)
            log.warning("configuration refresh failed (the last known configurations stay in use): %s", exc)
            return 0
        for agent_id, config in changed:
            if self._placeholder(agent_id, config):
                continue
            if agent_id in self._configs or agent_id in self._fetching:
                self._announced.discard(agent_id)
                self._configs[agent_id] = config
        return len(changed)

    def _placeholder(self, agent_id: str, config: AgentConfig) -> bool:
        """A stored default row of an agent whose configuration came on the topic: a registration (this cache's,
        or a sink's parent row), not a change: the topic's configuration stays."""
        return agent_id in self._announced and config == self._default
