"""A cache of merged proposition sets and personas for one propositions directory.

Long-running processes (the gate worker, the step processor) load each (agent, dimension) set once.
"""

from __future__ import annotations

from pathlib import Path

from engine.errors import PropositionFileError
from engine.models import Dimension, Persona
from engine.personas import load_persona
from engine.proposition_tree import validate_tree
from engine.propositions import PropositionSet, load_set
from engine.propositions.loader import FileCache


class PropositionLibrary:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._sets: dict[tuple[str | None, Dimension, bool], PropositionSet] = {}
        self._files: FileCache = {}  # each file parsed once (a dimension's default file serves every agent)
        self._personas: dict[str, Persona | None] = {}

    def validate(self) -> None:
        """Fail fast at start-up with every ``FILE:LINE`` issue of the tree."""
        issues = validate_tree(self.directory)
        if issues:
            raise PropositionFileError(issues)

    def pset(self, agent_id: str | None, dimension: Dimension, *, action: bool = False) -> PropositionSet:
        """The merged set; ``action``: the gate's action-level claims (see :func:`engine.propositions.merge`)."""
        key = (agent_id, dimension, action)
        cached = self._sets.get(key)
        if cached is None:
            cached = load_set(self.directory, dimension, agent_id, cache=self._files, action=action)
            self._sets[key] = cached
        return cached

    def psets(
        self, agent_id: str | None, dimensions: tuple[Dimension, ...], *, action: bool = False
    ) -> dict[Dimension, PropositionSet]:
        return {d: self.pset(agent_id, d, action=action) for d in dimensions}

    def persona(self, agent_id: str) -> Persona | None:
        if agent_id not in self._personas:
            self._personas[agent_id] = load_persona(self.directory, agent_id)
        return self._personas[agent_id]
