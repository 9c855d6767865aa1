"""Declarative interventions: the validated form of one file entry and :func:`build`, which makes
:class:`Intervention` objects from it for the agents of a run.

Build once per run (it may read proposition files to resolve references), then pass the interventions to
:func:`engine.interventions.directives_for_step` at every step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.errors import ConfigurationError, FileIssue, PropositionFileError
from engine.interventions.effects import Effect
from engine.interventions.functional import NamedFunctional, all_of, make_functional
from engine.interventions.intervention import Intervention
from engine.interventions.preconditions import (
    INTERVENTION_WINDOW,
    InlineProposition,
    PropositionLike,
    TextualPrecondition,
)
from engine.interventions.types import Scope
from engine.models import Dimension
from engine.propositions.loader import load_set
from engine.propositions.models import PropositionSet, Window


@dataclass(frozen=True, slots=True)
class PropositionRef:
    """A propositional precondition as written: a file proposition (or whole set), or an inline claim."""

    dimension: Dimension | None = None
    proposition_id: str | None = None
    inline: InlineProposition | None = None
    threshold: float | None = None
    scope: Scope | None = None
    line: int = 0
    path: str = ""


@dataclass(frozen=True, slots=True)
class InterventionSpec:
    """One validated intervention entry. ``targets`` None means every agent of the run."""

    name: str
    effect: Effect
    targets: tuple[str, ...] | None = None
    functional: tuple[tuple[str, Any], ...] = ()
    textual: TextualPrecondition | None = None
    propositional: PropositionRef | None = None
    group: bool = False
    concurrent: bool = False
    enabled: bool = True
    window: Window = INTERVENTION_WINDOW
    description: str | None = None
    file: str = "<code>"
    line: int = 0
    propositions_dir: Path | None = field(default=None, compare=False)

    def where(self) -> str:
        return f"{self.file}:{self.line}"


def functional_of(spec: InterventionSpec) -> NamedFunctional | None:
    made = [make_functional(name, params) for name, params in spec.functional]
    if not made:
        return None
    return made[0] if len(made) == 1 else all_of(*made)


def _ref_error(spec: InterventionSpec, ref: PropositionRef, message: str) -> PropositionFileError:
    return PropositionFileError([FileIssue(spec.file, ref.line or spec.line, ref.path, message)])


def resolve(
    spec: InterventionSpec,
    ref: PropositionRef,
    agent_id: str | None,
    cache: dict[tuple[str, str | None], PropositionSet],
) -> PropositionLike:
    """The proposition (or set) ``ref`` names, from the merged set of ``agent_id`` (None: defaults only)."""
    if ref.inline is not None:
        return ref.inline
    if ref.dimension is None:
        raise _ref_error(spec, ref, "needs a dimension or an inline claim")
    if spec.propositions_dir is None:
        raise ConfigurationError(f"{spec.where()}: no propositions directory to resolve {ref.dimension.value}")
    key = (ref.dimension.value, agent_id)
    if key not in cache:
        cache[key] = load_set(spec.propositions_dir, ref.dimension, agent_id)
    pset = cache[key]
    if ref.proposition_id is None:
        return pset
    try:
        return pset.get(ref.proposition_id)
    except KeyError:
        who = f"agent '{agent_id}'" if agent_id else "the defaults"
        message = f"proposition '{ref.proposition_id}' is not in the {ref.dimension.value} set of {who}"
        raise _ref_error(spec, ref, message) from None


def _build_one(
    spec: InterventionSpec,
    targets: list[str],
    cache: dict[tuple[str, str | None], PropositionSet],
) -> Intervention:
    intervention = Intervention(targets, name=spec.name, window=spec.window, concurrent=spec.concurrent)
    functional = functional_of(spec)
    if functional is not None:
        intervention.set_functional_precondition(functional)
    if spec.textual is not None:
        intervention.set_textual_precondition(spec.textual.claim, scope=spec.textual.scope)
    if (ref := spec.propositional) is not None:
        agent = targets[0] if len(targets) == 1 and not spec.group else None
        proposition = resolve(spec, ref, agent, cache)
        intervention.set_propositional_precondition(proposition, ref.threshold, scope=ref.scope)
    return intervention.set_effect(spec.effect)


def build(spec: InterventionSpec, agent_ids: Sequence[str]) -> list[Intervention]:
    """Interventions for the run's ``agent_ids``: one per target, or one over all targets when ``group``.

    Explicit targets that are not among ``agent_ids`` are left out; a disabled spec builds nothing. A
    proposition reference is resolved in each target's merged set (the defaults for a group).
    """
    if not spec.enabled:
        return []
    targets = list(agent_ids) if spec.targets is None else [t for t in spec.targets if t in agent_ids]
    if not targets:
        return []
    groups = [targets] if spec.group else [[t] for t in targets]
    cache: dict[tuple[str, str | None], PropositionSet] = {}
    return [_build_one(spec, members, cache) for members in groups]


def build_all(specs: Sequence[InterventionSpec], agent_ids: Sequence[str]) -> list[Intervention]:
    """Every spec built for ``agent_ids``, in declaration order."""
    return [intervention for spec in specs for intervention in build(spec, agent_ids)]
