"""Custom oracles: only those the installation registered, never an import path taken from a YAML file.

A package registers an oracle under the entry point group :data:`ENTRY_POINT_GROUP`, for example in its
``pyproject.toml``::

    [project.entry-points."persona_drift.metareason_oracles"]
    ISOComplianceOracle = "acme_oracles.iso:ISOComplianceOracle"

A family file names it by ``class`` (or ``class_name``); its ``module`` is documentation only. The
registered object is called with the oracle's ``config`` mapping and must return an object with
``async evaluate(answer: str, context: Mapping[str, Any]) -> float | tuple[float, Mapping[str, Any]]``
(a score in [0, 1], optionally with details). ``context`` holds ``prompt``, ``params`` and ``variant_id``.
Registered oracles are installed code the operator chose, so they run in process.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Protocol

from engine.errors import ConfigurationError

ENTRY_POINT_GROUP = "persona_drift.metareason_oracles"


class CustomOracleImpl(Protocol):
    async def evaluate(self, answer: str, context: Mapping[str, Any]) -> Any: ...


Factory = Callable[[Mapping[str, Any]], CustomOracleImpl]


class CustomOracles:
    """Registered custom oracles by name; entries are loaded only when an oracle is built."""

    def __init__(self, factories: Mapping[str, Factory | EntryPoint]) -> None:
        self._factories = dict(factories)

    @classmethod
    def installed(cls) -> CustomOracles:
        return cls.from_entry_points(entry_points(group=ENTRY_POINT_GROUP))

    @classmethod
    def from_entry_points(cls, points: Iterable[EntryPoint]) -> CustomOracles:
        return cls({point.name: point for point in points})

    def names(self) -> frozenset[str]:
        return frozenset(self._factories)

    def build(self, name: str, config: Mapping[str, Any]) -> CustomOracleImpl:
        factory = self._factories.get(name)
        if factory is None:
            raise ConfigurationError(f"custom oracle {name!r} is not registered ({ENTRY_POINT_GROUP})")
        if isinstance(factory, EntryPoint):
            try:
                factory = factory.load()
            except Exception as exc:  # a broken plugin must not look like a missing one
                raise ConfigurationError(f"custom oracle {name!r}: cannot load {factory.value}: {exc}") from exc
        built: CustomOracleImpl = factory(config)
        return built
