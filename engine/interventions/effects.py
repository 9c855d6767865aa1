"""Intervention effects: directive text templates with character-aware variants.

An effect has a default template and optional per-agent variants keyed by agent id (``michael`` tells a
story, ``dwight`` asserts authority, …). Templates use the claim syntax (``{{agent_name}}``,
``{{channel_name}}``) and are filled with :func:`engine.propositions.templates.render_claim`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from engine.errors import ConfigurationError
from engine.interventions.types import StepContext
from engine.propositions.templates import render_claim


@dataclass(frozen=True, slots=True)
class Effect:
    """``default`` for every agent without a variant; ``variants`` maps agent ids to their own template."""

    default: str
    variants: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.default.strip():
            raise ConfigurationError("an intervention effect needs a non-empty default text")
        object.__setattr__(self, "variants", MappingProxyType(dict(self.variants)))

    def template_for(self, agent_id: str) -> str:
        return self.variants.get(agent_id, self.default)

    def render(self, agent_id: str, context: StepContext) -> str:
        """The directive text for ``agent_id`` at this step."""
        variables = {
            "agent_name": context.agent_name(agent_id),
            "channel_name": context.channel_label(),
        }
        return render_claim(self.template_for(agent_id), variables)


def as_effect(effect: Effect | str) -> Effect:
    return effect if isinstance(effect, Effect) else Effect(effect)
