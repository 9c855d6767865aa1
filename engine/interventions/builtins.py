"""The two built-in interventions of seed doc 001, enabled per agent by its :class:`AgentConfig`.

**Anti-convergence** (``anti_convergence_enabled``): a propositional precondition on the channel trajectory,
"the participants keep distinct voices", fires when its 0–9 score is below the agent's threshold. The
configured ``convergence_threshold`` is a fraction of the 0–9 scale when it is at most 1 (the default 0.6
means 0.6 × 9 = 5.4) and a score on that scale when it is above 1 (e.g. 5 means 5). A cheap functional guard
skips the judge call until the channel holds a few messages. The nudge is character-aware.

**Variety** (``variety_intervention_enabled``): the agent has sent at least ``variety_message_threshold``
messages AND the judge confirms "{{agent_name}} has not proposed an entirely new idea in more than 10
events" on the agent's own history; the nudge asks for completely new ideas (the paper's variety
intervention).

Each intervention is built for one agent with that agent's threshold, so agents with different settings
can share a step; identical judge requests within a step are answered once (see :mod:`.step`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from engine.interventions.effects import Effect
from engine.interventions.functional import channel_min_messages, min_messages
from engine.interventions.intervention import Intervention
from engine.interventions.preconditions import InlineProposition
from engine.interventions.types import DirectiveKind, Scope
from engine.models import AgentConfig
from engine.scoring import PERFECT

#: The judge is not asked about convergence before the channel holds this many messages.
ANTI_CONVERGENCE_MIN_CHANNEL_MESSAGES = 4

DISTINCT_VOICES = InlineProposition(
    id="participants-keep-distinct-voices",
    claim=(
        "The participants keep distinct voices: each one's wording, tone and opinions stay recognisably "
        "their own instead of echoing or simply agreeing with the others."
    ),
    include_persona=False,
)

VARIETY_CLAIM = "{{agent_name}} has not proposed an entirely new idea in more than 10 events."

ANTI_CONVERGENCE_EFFECT = Effect(
    default=(
        "{{agent_name}}, the conversation is sliding into everyone sounding the same. In your next message "
        "speak unmistakably as yourself: your own opinion, your own way of putting things. Disagree or add a "
        "different angle if that is what you would really do."
    ),
    variants={
        "michael": (
            "{{agent_name}}, everyone is starting to sound alike. Make it yours again: tell a story, ideally "
            "one about yourself, that shows how you see this differently from the rest."
        ),
        "dwight": (
            "{{agent_name}}, the others are blurring into one voice. Assert your authority: state your "
            "position firmly, lean on your rank and expertise, and do not simply go along with them."
        ),
        "jim": (
            "{{agent_name}}, the group is converging into one voice. Instead of agreeing, step back and make "
            "a dry, witty observation about what is actually going on."
        ),
    },
)

VARIETY_EFFECT = Effect(
    default=(
        "{{agent_name}}, you have been circling the same ideas for a while. In your next message propose "
        "something completely new: an idea nobody has raised yet, not a variation of an earlier one."
    ),
    variants={
        "michael": (
            "{{agent_name}}, time for a fresh vision: pitch a bold, completely new idea nobody in the room "
            "has mentioned, not a rerun of an earlier one."
        ),
        "dwight": (
            "{{agent_name}}, stop repeating known tactics: put forward a completely new plan of your own, "
            "one nobody has suggested yet."
        ),
        "jim": (
            "{{agent_name}}, you have been riffing on the same things: suggest a completely new idea, one "
            "this conversation has not heard yet."
        ),
    },
)


def convergence_score_threshold(value: float) -> float:
    """``convergence_threshold`` on the 0–9 scale: a fraction of 9 when ≤ 1, a score when above."""
    return value * PERFECT if value <= 1 else value


def anti_convergence(agent_id: str, config: AgentConfig) -> Intervention:
    threshold = convergence_score_threshold(config.convergence_threshold)
    return (
        Intervention(agent_id, name=DirectiveKind.ANTI_CONVERGENCE.value)
        .set_functional_precondition(channel_min_messages(ANTI_CONVERGENCE_MIN_CHANNEL_MESSAGES))
        .set_propositional_precondition(DISTINCT_VOICES, threshold, scope=Scope.CHANNEL)
        .set_effect(ANTI_CONVERGENCE_EFFECT)
    )


def variety(agent_id: str, config: AgentConfig) -> Intervention:
    return (
        Intervention(agent_id, name=DirectiveKind.VARIETY.value)
        .set_functional_precondition(min_messages(config.variety_message_threshold))
        .set_textual_precondition(VARIETY_CLAIM, scope=Scope.AGENT)
        .set_effect(VARIETY_EFFECT)
    )


def builtin_interventions(agent_ids: Sequence[str], configs: Mapping[str, AgentConfig]) -> list[Intervention]:
    """Anti-convergence, then variety, for the agents whose configuration enables them (defaults: off)."""
    chosen = [(a, configs.get(a, AgentConfig())) for a in agent_ids]
    return [anti_convergence(a, c) for a, c in chosen if c.anti_convergence_enabled] + [
        variety(a, c) for a, c in chosen if c.variety_intervention_enabled
    ]
