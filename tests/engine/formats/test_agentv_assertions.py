"""4.x deterministic assertions, ``negate`` and ``required``/``min_score`` gating, with exact expectations."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine.formats.agentv.assertions import string_assertion
from engine.formats.agentv.loader import load_eval_file
from engine.formats.agentv.model import EvaluatorSpec
from engine.formats.agentv.runner import run_cases
from engine.formats.targets import TargetAnswer, TargetRequest

ANSWER = "  Meeting at 3 pm. Attendance is MANDATORY.  "


@pytest.mark.parametrize(
    ("kind", "config", "score", "line"),
    [
        ("contains", {"value": "3 pm"}, 1.0, 'Output contains "3 pm"'),
        ("contains", {"value": "mandatory"}, 0.0, 'Output does not contain "mandatory"'),
        ("icontains", {"value": "mandatory"}, 1.0, 'Output contains "mandatory" (case-insensitive)'),
        ("contains_any", {"value": ["x", "pm"]}, 1.0, 'Output contains "pm"'),
        ("contains_all", {"value": ["pm", "cake", "pie"]}, 0.0, 'Output missing: "cake", "pie"'),
        (
            "icontains_all",
            {"value": ["MEETING", "mandatory"]},
            1.0,
            "Output contains all 2 expected strings (case-insensitive)",
        ),
        ("starts_with", {"value": "Meeting "}, 1.0, 'Output starts with "Meeting "'),
        ("ends_with", {"value": "MANDATORY."}, 1.0, 'Output ends with "MANDATORY."'),
        ("equals", {"value": "Meeting"}, 0.0, 'Output equals "Meeting"'),
        ("regex", {"value": "^meeting at \\d", "flags": "i"}, 0.0, "Output does not match pattern /^meeting at \\d/i"),
        ("regex", {"value": "meeting at \\d", "flags": "i"}, 1.0, "Output matches pattern /meeting at \\d/i"),
        ("is_json", {}, 0.0, "Output is not valid JSON"),
    ],
)
def test_string_assertions(kind: str, config: dict[str, Any], score: float, line: str) -> None:
    found = string_assertion(EvaluatorSpec("a", kind, config=config), ANSWER)
    assert found.score == score
    assert (found.hits or found.misses) == (line,)


class Replies:
    name = "replies"

    def __init__(self, text: str) -> None:
        self.text = text

    async def answer(self, request: TargetRequest) -> TargetAnswer:
        return TargetAnswer(request.item_id, self.text, self.name)


async def test_negate_and_required_gates(tmp_path: Path) -> None:
    path = tmp_path / "gates.eval.yaml"
    path.write_text(
        "tests:\n"
        "  - id: negated\n    input: hi\n    assertions:\n"
        "      - {name: polite, type: icontains, value: sorry, negate: true}\n"
        "      - {name: says-hi, type: contains, value: Hello, weight: 3}\n"
        "  - id: gated\n    input: hi\n    assertions:\n"
        "      - {name: says-hi, type: contains, value: Hello}\n"
        "      - {name: must, type: contains, value: absent, required: true}\n"
        "  - id: floor\n    input: hi\n    assertions:\n"
        "      - {name: says-hi, type: contains, value: Hello, required: true, min_score: 1}\n"
        "      - {name: other, type: contains, value: absent}\n"
    )
    loaded, issues = load_eval_file(path)
    assert issues == [] and loaded is not None
    outcomes = await run_cases(loaded.cases, Replies("Hello there"), None)
    assert [(o.case.id, o.score) for o in outcomes] == [("negated", 1.0), ("gated", 0.0), ("floor", 0.5)]
    polite = outcomes[0].results[0]
    assert (polite.score, polite.verdict, polite.hits) == (
        1.0,
        "pass",
        ('Output does not contain "sorry" (case-insensitive)',),
    )
