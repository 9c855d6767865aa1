"""Effects: character-aware variants rendered with the claim template syntax."""

from __future__ import annotations

from dataclasses import replace

import pytest

from engine.errors import ConfigurationError
from engine.interventions import Effect

from .conftest import MakeContext


def test_variant_for_the_agent_and_default_for_the_others(make_context: MakeContext) -> None:
    effect = Effect(
        "{{agent_name}}, say something new in {{channel_name}}.",
        {"michael": "{{agent_name}}, tell a story.", "dwight": "{{agent_name}}, assert authority."},
    )
    context = make_context(("michael", "dwight", "pam"))

    assert effect.render("michael", context) == "Michael Scott, tell a story."
    assert effect.render("dwight", context) == "Dwight Schrute, assert authority."
    assert effect.render("pam", context) == "Pam Beesly, say something new in sales."


def test_a_step_without_channel_names_the_conversation(make_context: MakeContext) -> None:
    context = replace(make_context(("jim",)), channel=None)

    assert Effect("Back to {{channel_name}}, {{agent_name}}.").render("jim", context) == (
        "Back to this conversation, Jim Halpert."
    )


def test_variants_cannot_be_changed_after_creation() -> None:
    source = {"jim": "a witty observation"}
    effect = Effect("default", source)
    source["jim"] = "changed"

    assert effect.template_for("jim") == "a witty observation"
    with pytest.raises(TypeError):
        effect.variants["jim"] = "x"  # type: ignore[index]


def test_empty_default_is_rejected() -> None:
    with pytest.raises(ConfigurationError, match="non-empty default"):
        Effect("   ")
