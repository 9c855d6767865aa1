"""How a classifier node reads its class out of the model's free text.

Both the answer and the valid classes are *normalised*: underscores become spaces, every other punctuation
mark is dropped, whitespace is collapsed and the text lower-cased. Classes are then matched on word
boundaries, line by line. Where matches overlap ("not relevant" holds "relevant") the longer class wins.

- ``parse_from_start=False`` (the default, for reasoning-then-answer prompts): the **last** occurrence in the
  text wins — the last line holding a class, and within it the match that starts last.
- ``parse_from_start=True``: the **first** line holding any class; within that line, the class listed first
  in ``valid_classes``.

The class is returned as spelled in ``valid_classes``; None when no class occurs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

_PUNCTUATION = re.compile(r"[^\w\s]|_", re.UNICODE)
_SPACES = re.compile(r"[ \t\f\v]+")
_CONFIDENCE = re.compile(r"confidence\W{0,3}\s*(\d+(?:\.\d+)?)\s*(%?)", re.IGNORECASE)


def normalise(text: str) -> str:
    """``"Not_Relevant!!"`` -> ``"not relevant"`` (per line; line breaks are kept)."""
    lines = []
    for line in text.replace("_", " ").splitlines():
        cleaned = _PUNCTUATION.sub("", line)
        lines.append(_SPACES.sub(" ", cleaned).strip().lower())
    return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class _Match:
    start: int
    end: int
    rank: int  # position of the class in valid_classes


def _line_matches(line: str, patterns: Sequence[re.Pattern[str] | None]) -> list[_Match]:
    found = [
        _Match(m.start(), m.end(), rank)
        for rank, pattern in enumerate(patterns)
        if pattern is not None
        for m in pattern.finditer(line)
    ]
    # a match inside a longer overlapping match loses ("relevant" inside "not relevant")
    return [
        m
        for m in found
        if not any(o.start <= m.start and m.end <= o.end and (o.end - o.start) > (m.end - m.start) for o in found)
    ]


def parse_class(text: str, valid_classes: Sequence[str], *, parse_from_start: bool = False) -> str | None:
    patterns = [
        re.compile(rf"(?<!\w){re.escape(n)}(?!\w)") if (n := normalise(c).replace("\n", " ")) else None
        for c in valid_classes
    ]
    lines = normalise(text).splitlines()
    for line in lines if parse_from_start else reversed(lines):
        matches = _line_matches(line, patterns)
        if not matches:
            continue
        best = min(matches, key=lambda m: m.rank) if parse_from_start else max(matches, key=lambda m: m.start)
        return valid_classes[best.rank]
    return None


def parse_confidence(text: str) -> float | None:
    """A ``Confidence: 0.8`` (or ``80%``) line of the answer, as a probability in [0, 1]."""
    match = _CONFIDENCE.search(text)
    if match is None:
        return None
    value = float(match.group(1))
    if match.group(2) or value > 1:
        value /= 100
    return value if 0 <= value <= 1 else None


def correction_message(valid_classes: Sequence[str]) -> str:
    listed = ", ".join(f'"{c}"' for c in valid_classes)
    return (
        f"Your answer did not state one of the valid classes ({listed}). "
        "Reply again: give your reasoning if you wish, and end with a line holding exactly one of those classes."
    )
