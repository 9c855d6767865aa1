"""Session plans: who talks about what, in which session, identical for both arms of a scenario.

Personas are sorted by id, shuffled with the scenario's ``population.shuffle_seed`` and cut to
``population.agents``; group ``g`` takes the next ``group_size`` of them (wrapping around when the population
is smaller than ``groups × group_size``, so a tiny population can still run every session). Every group runs
every theme, ``repetitions`` times; sessions are ordered repetition → theme → group, so the first K sessions
already cover several themes and groups. A session's ``key`` (``g2-home-chores-r1``) is the same in both arms;
its ``seed`` drives the ``sequential_random`` order.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass

from engine.errors import ConfigurationError
from engine.simulation.scenario import Scenario, Theme


@dataclass(frozen=True, slots=True)
class SessionPlan:
    key: str
    group: int
    theme: Theme
    repetition: int
    agent_ids: tuple[str, ...]
    seed: int

    @property
    def rapporteur(self) -> str:
        return self.agent_ids[0]


def groups_of(scenario: Scenario, persona_ids: Sequence[str]) -> list[tuple[str, ...]]:
    pool = sorted(persona_ids)
    random.Random(scenario.population.shuffle_seed).shuffle(pool)
    pool = pool[: scenario.population.agents] if scenario.population.agents else pool
    if len(pool) < scenario.group_size:
        raise ConfigurationError(
            f"scenario {scenario.name} needs groups of {scenario.group_size}; the population has {len(pool)} personas"
        )
    size = scenario.group_size
    return [tuple(pool[(g * size + i) % len(pool)] for i in range(size)) for g in range(scenario.groups)]


def plan_sessions(scenario: Scenario, persona_ids: Sequence[str], limit: int | None = None) -> list[SessionPlan]:
    """Every session of one arm (the first ``limit`` when given), rapporteur first in each group."""
    groups = groups_of(scenario, persona_ids)
    plans = []
    for repetition in range(1, scenario.repetitions + 1):
        for theme in scenario.themes:
            for g, members in enumerate(groups, start=1):
                key = f"g{g}-{theme.id}-r{repetition}"
                at = scenario.rapporteur.position
                ordered = (members[at], *members[:at], *members[at + 1 :])
                seed = int.from_bytes(hashlib.sha256(f"{scenario.name}|{key}".encode()).digest()[:4], "big")
                plans.append(SessionPlan(key, g, theme, repetition, ordered, seed))
    return plans[:limit] if limit else plans
