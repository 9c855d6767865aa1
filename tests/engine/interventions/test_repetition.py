"""Repetition suppression: no judge, maximal repeated phrases, the last five messages only."""

from __future__ import annotations

import pytest

from engine.errors import ConfigurationError
from engine.interventions import DirectiveKind, repetition_directive

CATCHPHRASE = [
    "Well, that's what she said, everybody.",
    "Sales are up this quarter. That's what she said!",
    "Can we order pizza for lunch today?",
    "I need the report by Friday. That's what she said.",
    "Toby, please leave the room.",
]


def test_directive_names_the_maximal_repeated_phrase() -> None:
    directive = repetition_directive("michael", "Michael Scott", CATCHPHRASE, threshold=0.1)

    assert directive is not None
    assert directive.kind == DirectiveKind.REPETITION.value == "repetition"
    assert directive.agent_id == "michael"
    assert '- "that\'s what she said"' in directive.text
    assert '"that\'s what she"' not in directive.text  # its 3-grams are not listed separately
    for message in CATCHPHRASE:
        assert message in directive.text
    assert directive.text.startswith("Michael Scott,")
    assert "that's what she said" in directive.evidence and "> threshold 0.10" in directive.evidence


def test_no_directive_at_or_below_the_threshold() -> None:
    fresh = ["Good morning team.", "Who took my stapler?", "Let us review the budget."]

    assert repetition_directive("jim", "Jim Halpert", fresh, threshold=0.0) is None
    same = ["the quick brown fox", "the quick brown fox"]  # ratio exactly 1.0
    assert repetition_directive("jim", "Jim Halpert", same, threshold=1.0) is None
    assert repetition_directive("jim", "Jim Halpert", same, threshold=0.99) is not None


def test_only_the_last_five_messages_count() -> None:
    old = ["bears beets battlestar galactica", "bears beets battlestar galactica"]
    recent = ["Question one.", "Question two?", "Another topic.", "Something else.", "Final word."]

    assert repetition_directive("dwight", "Dwight Schrute", old + recent, threshold=0.0) is None
    found = repetition_directive("dwight", "Dwight Schrute", recent[1:] + old[:1] + old[1:], 0.0)
    assert found is not None and '"bears beets battlestar galactica"' in found.text


@pytest.mark.parametrize("threshold", [-0.1, 1.5, True])
def test_threshold_outside_zero_one_is_a_configuration_error(threshold: float) -> None:
    with pytest.raises(ConfigurationError, match="repetition_threshold"):
        repetition_directive("jim", "Jim", CATCHPHRASE, threshold)
