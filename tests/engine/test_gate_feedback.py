"""The gate's feedback to a failed attempt: every failed check, and escalation towards the last attempt."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from engine.gate import AttemptResult, SimilarityCheck, build_feedback
from engine.models import AgentConfig, Dimension
from tests.engine.conftest import ConfigFactory, build_check, build_result

SILENCE = re.compile(r"skip: true.*saying nothing is better than acting poorly", re.IGNORECASE | re.DOTALL)


# --- feedback -------------------------------------------------------------------------------------------


def _failed(attempt: int) -> AttemptResult:
    return build_result(
        attempt,
        build_check(
            Dimension.ADHERENCE, 3.5, reasoning="sounds like a bland assistant", recommendations=("Be louder.",)
        ),
        build_check(Dimension.SUITABILITY, 4.0, reasoning="off topic", recommendations=("Answer Jim.", "Stay short.")),
        build_check(Dimension.FLUENCY, 8.0, reasoning="reads smoothly"),
        similarity=SimilarityCheck(0.75, 0.6, False, "We should all go bowling tonight"),
    )


def test_feedback_reports_every_failed_check(make_config: ConfigFactory) -> None:
    text = build_feedback(_failed(1), make_config())
    assert "draft 1" in text
    expected = ("3.5", "sounds like a bland assistant", "Be louder.", "4.0", "off topic", "Answer Jim.", "Stay short.")
    assert [needle for needle in expected if needle not in text] == []
    assert "We should all go bowling tonight" in text and "0.75" in text
    assert "reads smoothly" not in text  # a passed dimension gets no section


def test_feedback_leaves_out_a_passed_similarity(make_config: ConfigFactory) -> None:
    result = build_result(1, build_check(score=2), similarity=SimilarityCheck(0.1, 0.6, True, "an older message"))
    assert "an older message" not in build_feedback(result, make_config())


def test_escalation_grows_with_the_attempt_number(make_config: ConfigFactory) -> None:
    config = make_config(max_correction_attempts=2)
    first, second = build_feedback(_failed(1), config), build_feedback(_failed(2), config)
    assert first != second.replace("draft 2", "draft 1")
    assert "MORE RADICALLY" not in first and "MORE RADICALLY" in second
    assert len(second) > len(first)


@given(st.integers(1, 8))
def test_every_feedback_names_silence_and_radical_change(corrections: int) -> None:
    """TinyTroupe: from the first retry on, change more radically and stopping beats acting poorly."""
    config = AgentConfig(max_correction_attempts=corrections)
    for attempt in range(1, corrections + 1):
        text = build_feedback(_failed(attempt), config)
        assert SILENCE.search(text), attempt
        assert "more radically" in text.lower(), attempt


@given(st.integers(2, 8))
def test_escalation_never_weakens(corrections: int) -> None:
    config = AgentConfig(max_correction_attempts=corrections)
    lengths = [len(build_feedback(_failed(a), config).replace(f"draft {a}", "")) for a in range(1, corrections + 1)]
    assert lengths == sorted(lengths)
