"""Interventions: nudges injected before agents act (TinyTroupe ``Intervention``) and repetition suppression.

- :class:`Intervention` / :class:`InterventionBatch`: AND-ed functional, textual and propositional
  preconditions with fluent setters, and an :class:`Effect` with character-aware variants;
- :func:`load_interventions` / :func:`build`: declarative interventions from ``propositions/interventions``;
- :func:`builtin_interventions`: anti-convergence and variety, enabled per agent by its ``AgentConfig``;
- :func:`repetition_directive`: algorithmic repetition suppression (no judge call);
- :func:`directives_for_step` / :func:`evaluate_step`: one evaluation pass per step with a deadline.
"""

from engine.interventions.builtins import (
    ANTI_CONVERGENCE_EFFECT,
    DISTINCT_VOICES,
    VARIETY_CLAIM,
    VARIETY_EFFECT,
    anti_convergence,
    builtin_interventions,
    convergence_score_threshold,
    variety,
)
from engine.interventions.effects import Effect
from engine.interventions.functional import (
    FunctionalPrecondition,
    NamedFunctional,
    all_of,
    channel_min_messages,
    every_n_steps,
    functional_names,
    make_functional,
    max_messages,
    min_messages,
    register_functional,
)
from engine.interventions.intervention import Intervention, InterventionBatch
from engine.interventions.loader import load_intervention_files, load_interventions
from engine.interventions.preconditions import (
    INTERVENTION_WINDOW,
    InlineProposition,
    PropositionalPrecondition,
    TextualPrecondition,
)
from engine.interventions.repetition import repetition_directive
from engine.interventions.spec import InterventionSpec, PropositionRef, build, build_all
from engine.interventions.step import (
    SharedJudge,
    StepRequestLike,
    directives_for_step,
    evaluate_step,
    repetition_pass,
)
from engine.interventions.types import (
    Directive,
    DirectiveKind,
    InterventionOutcome,
    PreconditionKind,
    PreconditionResult,
    Scope,
    StepContext,
    StepResult,
)

__all__ = [
    "ANTI_CONVERGENCE_EFFECT",
    "DISTINCT_VOICES",
    "INTERVENTION_WINDOW",
    "VARIETY_CLAIM",
    "VARIETY_EFFECT",
    "Directive",
    "DirectiveKind",
    "Effect",
    "FunctionalPrecondition",
    "InlineProposition",
    "Intervention",
    "InterventionBatch",
    "InterventionOutcome",
    "InterventionSpec",
    "NamedFunctional",
    "PreconditionKind",
    "PreconditionResult",
    "PropositionRef",
    "PropositionalPrecondition",
    "Scope",
    "SharedJudge",
    "StepContext",
    "StepRequestLike",
    "StepResult",
    "TextualPrecondition",
    "all_of",
    "anti_convergence",
    "build",
    "build_all",
    "builtin_interventions",
    "channel_min_messages",
    "convergence_score_threshold",
    "directives_for_step",
    "evaluate_step",
    "every_n_steps",
    "functional_names",
    "load_intervention_files",
    "load_interventions",
    "make_functional",
    "max_messages",
    "min_messages",
    "register_functional",
    "repetition_directive",
    "repetition_pass",
    "variety",
]
