"""The classifier's answer parsing: normalisation, word boundaries, overlaps, both parse directions."""

from __future__ import annotations

import pytest

from engine.formats.plexus.parsing import normalise, parse_class, parse_confidence

YES_NO = ["Yes", "No"]
RELEVANCE = ["Relevant", "Not Relevant"]
LEVELS = ["High", "Medium", "Low"]
BALANCE = ["Balanced", "Technical-Heavy", "Emotional-Heavy"]
SNAKE = ["good_call", "bad_call"]

CASES = [
    # (answer, classes, parse_from_start, expected)
    ("Yes", YES_NO, False, "Yes"),
    ("no", YES_NO, False, "No"),
    ("YES.", YES_NO, False, "Yes"),
    ("The agent was polite.\nYes", YES_NO, False, "Yes"),
    ("Yes, at first glance.\nBut on reflection: No", YES_NO, False, "No"),
    ("Yes, at first glance.\nBut on reflection: No", YES_NO, True, "Yes"),
    ("No doubt about it, yes", YES_NO, False, "Yes"),  # last occurrence on the line
    ("No doubt about it, yes", YES_NO, True, "Yes"),  # first line; Yes is listed first
    ("No doubt about it, yes", ["No", "Yes"], True, "No"),  # ... unless No is listed first
    ("Nobody knows", YES_NO, False, None),  # word boundary: "no" inside "nobody"
    ("Yesterday was fine", YES_NO, False, None),  # word boundary: "yes" inside "yesterday"
    ("The answer is: Yes!", YES_NO, False, "Yes"),
    ('"No"', YES_NO, False, "No"),
    ("**Yes**", YES_NO, False, "Yes"),
    ("", YES_NO, False, None),
    ("I cannot decide.", YES_NO, False, None),
    ("This is not relevant.", RELEVANCE, False, "Not Relevant"),  # the longer class wins the overlap
    ("This is not relevant.", RELEVANCE, True, "Not Relevant"),
    ("Relevant? No: Not_Relevant", RELEVANCE, False, "Not Relevant"),  # underscore = space
    ("Relevant.", RELEVANCE, False, "Relevant"),
    ("It is relevant, not irrelevant", RELEVANCE, False, "Relevant"),  # "irrelevant" is another word
    ("Not relevant at first, but relevant", RELEVANCE, False, "Relevant"),
    ("Not relevant at first, but relevant", RELEVANCE, True, "Relevant"),  # same line: first-listed class
    ("Not relevant at first, but relevant", ["Not Relevant", "Relevant"], True, "Not Relevant"),
    ("Complexity: medium", LEVELS, False, "Medium"),
    ("High effort, low reward.\nOverall: Medium", LEVELS, False, "Medium"),
    ("High effort, low reward.\nOverall: Medium", LEVELS, True, "High"),
    ("low... or HIGH", LEVELS, False, "High"),
    ("It is technical-heavy", BALANCE, False, "Technical-Heavy"),
    ("It is Technical Heavy", BALANCE, False, None),  # the hyphen is dropped, so the words join
    ("mostly emotional-heavy!!", BALANCE, False, "Emotional-Heavy"),
    ("Verdict: good call", SNAKE, False, "good_call"),
    ("Verdict: bad_call", SNAKE, False, "bad_call"),
    ("Result:\n\n   Yes   \n\n", YES_NO, False, "Yes"),
    ("yes\tno", YES_NO, True, "Yes"),
    ("yes\tno", YES_NO, False, "No"),
    ("Copay Guarantee, not None", ["Copay Guarantee", "None"], False, "None"),
    ("None of the categories apply: Copay Guarantee", ["Copay Guarantee", "None"], False, "Copay Guarantee"),
]


@pytest.mark.parametrize(("answer", "classes", "from_start", "expected"), CASES)
def test_parse_class(answer: str, classes: list[str], from_start: bool, expected: str | None) -> None:
    assert parse_class(answer, classes, parse_from_start=from_start) == expected


def test_there_are_at_least_thirty_parsing_cases() -> None:
    assert len(CASES) >= 30


def test_normalise_drops_punctuation_and_keeps_lines() -> None:
    assert normalise("Not_Relevant!!  Really?\n  YES.") == "not relevant really\nyes"


@pytest.mark.parametrize(
    ("answer", "expected"),
    [("Yes\nConfidence: 0.85", 0.85), ("confidence = 70%", 0.7), ("Confidence: 92", 0.92), ("Yes", None)],
)
def test_parse_confidence(answer: str, expected: float | None) -> None:
    assert parse_confidence(answer) == expected
