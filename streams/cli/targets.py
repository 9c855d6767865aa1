"""``--target`` of the format commands (MetaReason, AgentV): the resolvers that turn ``actor:AGENT_ID`` and
``llm:MODEL`` into a persona actor and a text model with this process's settings."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.actors.base import Actor
    from engine.formats.targets import Target
    from engine.models import Persona
    from engine.settings import Settings


def build_target(spec: str, settings: Settings, *, actor_spec: str | None = None, cwd: Path | None = None) -> Target:
    """The target named by ``spec``; ``actor:`` targets answer with ``actor_spec`` (default: the settings')."""
    from engine.actors.factory import make_actor
    from engine.errors import ConfigurationError
    from engine.formats.targets import parse_target
    from engine.llm.factory import make_text_model
    from engine.personas import load_persona, persona_files
    from engine.propositions.models import suggestion

    def actor(agent_id: str) -> tuple[Actor, Persona | None]:
        persona = load_persona(settings.propositions_dir, agent_id)
        if persona is None:  # a typo would answer with a generic persona: nothing of the agent is measured
            known = sorted(p.stem for p in persona_files(settings.propositions_dir))
            raise ConfigurationError(
                f"--target actor:{agent_id}: no persona for {agent_id!r} in {settings.propositions_dir}"
                f"{suggestion(agent_id, known)} (pass --propositions DIR for a cast of your own)"
            )
        return make_actor(actor_spec or "", settings), persona

    return parse_target(
        spec,
        cwd=cwd or Path.cwd(),
        resolve_actor=actor,
        resolve_model=lambda model: make_text_model(model, settings),
    )
