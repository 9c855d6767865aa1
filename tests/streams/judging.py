"""Scripted judges for gate tests: every claim rated as the same quality, inverted claims included."""

from __future__ import annotations

from engine.judges.scripted import ScriptedJudge

#: the bundled action claims that are inverted (a high value means the flaw is there)
INVERTED = ("*-derails-next", "*-generic-assistant-next", "*-sudden-new-personality-next", "*-repeats-earlier-next")


def uniform_judge(quality: int) -> ScriptedJudge:
    """Every claim judged ``quality`` good: plain claims score ``quality``, inverted ones ``9 - quality``."""
    rules = [{"proposition": pattern, "value": 9 - quality} for pattern in INVERTED]
    return ScriptedJudge.from_rules({"default": quality, "rules": rules})
