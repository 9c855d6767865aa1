from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engine.errors import ConfigurationError, PropositionFileError
from engine.judges.base import Claim, Judge, JudgeMode
from engine.judges.scripted import ScriptedJudge
from ops.fakes.judge_requests import make_request

WriteRules = Callable[[str], Path]


@pytest.fixture
def write_rules(tmp_path: Path) -> WriteRules:
    def write(text: str) -> Path:
        path = tmp_path / "rules.yaml"
        path.write_text(text, encoding="utf-8")
        return path

    return write


def judge_from(rules: list[dict[str, Any]], **top: Any) -> ScriptedJudge:
    return ScriptedJudge.from_rules({"default": 9, **top, "rules": rules})


async def score(judge: ScriptedJudge, claim_id: str = "c", **request: Any) -> int | bool:
    result = await judge.evaluate(make_request(claims=[Claim(claim_id, "text")], **request))
    return result.answers[0].value


async def test_first_matching_rule_wins_and_default_applies() -> None:
    judge = judge_from([{"proposition": "michael-*", "value": 3}, {"proposition": "michael-boring", "value": 1}])
    assert await score(judge, "michael-boring") == 3
    assert await score(judge, "dwight-loud") == 9


async def test_fnmatch_patterns_are_case_sensitive_globs() -> None:
    judge = judge_from([{"proposition": "adh-?-x", "value": 2}])
    assert await score(judge, "adh-1-x") == 2
    assert await score(judge, "adh-12-x") == 9
    assert await score(judge, "ADH-1-x") == 9


async def test_agent_and_message_contains() -> None:
    judge = judge_from(
        [
            {"agent": "dwight", "value": 1},
            {"message_contains": "BORING", "value": 2},
        ]
    )
    assert await score(judge, agent_id="dwight") == 1
    assert await score(judge, action="This is so boring today") == 2
    assert await score(judge, action="What a party") == 9
    assert await score(judge, action=None, events=()) == 9


async def test_agent_and_target_are_globs() -> None:
    """Experiments plant an effect per arm: session-scoped agent ids and session targets carry the arm."""
    judge = judge_from(
        [
            {"agent": "*.treatment.*", "value": 7},
            {"target": "*session x.control.g1-*", "value": 2},
        ]
    )
    assert await score(judge, agent_id="x.treatment.g1-a-r1.p1") == 7
    assert await score(judge, agent_id="x.control.g1-a-r1.p1") == 9
    assert await score(judge, agent_id=None, target_name="the conversation of session x.control.g1-a-r1") == 2
    assert await score(judge, agent_id=None, target_name="the conversation of session x.control.g2-a-r1") == 9


async def test_int_rules_score_bool_rules_check() -> None:
    judge = judge_from([{"value": False}, {"value": 4}], default_check=True, default_count=5)
    assert await score(judge) == 4
    check = await judge.evaluate(make_request(JudgeMode.CHECK))
    assert check.answers[0].value is False
    ideas = await judge.evaluate(make_request(JudgeMode.ENUMERATE))
    assert ideas.answers[0].value == 4 and len(ideas.answers[0].items) == 4


async def test_defaults_for_check_and_enumerate() -> None:
    judge = judge_from([], default_check=False, default_count=3)
    assert (await judge.evaluate(make_request(JudgeMode.CHECK))).answers[0].value is False
    assert (await judge.evaluate(make_request(JudgeMode.ENUMERATE))).answers[0].value == 3


async def test_batch_matches_every_claim_on_its_own() -> None:
    judge = judge_from([{"proposition": "claim-1", "value": 1}, {"proposition": "claim-3", "value": 3}])
    result = await judge.evaluate(make_request(claims=4))
    assert [a.value for a in result.answers] == [9, 1, 9, 3]
    assert judge.log.count() == 1


async def test_delay_and_call_log() -> None:
    judge = judge_from([{"proposition": "slow", "value": 5, "delay_s": 0.2}])
    started = time.perf_counter()
    assert await score(judge, "slow") == 5
    assert time.perf_counter() - started >= 0.19
    await judge.evaluate(make_request(JudgeMode.CHECK))
    assert judge.log.count() == 2
    assert judge.log.count(JudgeMode.SCORE) == 1 and judge.log.count(JudgeMode.CHECK) == 1


async def test_reasoning_and_double_check() -> None:
    judge = judge_from([{"value": 6, "reasoning": "scripted because"}])
    answer = (await judge.evaluate(make_request(double_check=True))).answers[0]
    assert answer.reasoning == "scripted because" and answer.first_value == 6


async def test_from_file_names_the_judge_after_the_stem(write_rules: WriteRules) -> None:
    path = write_rules('default: 8\nrules:\n  - proposition: "x-*"\n    value: 2\n')
    judge = ScriptedJudge.from_file(path)
    assert judge.name == "scripted:rules"
    assert isinstance(judge, Judge)
    assert await score(judge, "x-1") == 2
    assert await score(judge, "y") == 8


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("rules: []\n", ["rules.yaml:1: default: required"]),
        ("default: 10\n", ["rules.yaml:1: default: must be a whole number from 0 to 9"]),
        ("default: 9\ndefault_check: maybe\n", ["rules.yaml:2: default_check: must be true or false"]),
        ("default: 9\nextra: 1\n", ["rules.yaml:2: extra: unknown key"]),
        (
            "default: 9\nrules:\n  - proposition: a\n    value: 12\n  - agent: 3\n    value: 1\n    delay_s: -1\n",
            [
                "rules.yaml:4: rules[0].value: must be a whole number from 0 to 9 or true/false",
                "rules.yaml:5: rules[1].agent: must be a string",
                "rules.yaml:7: rules[1].delay_s: must be a number of seconds >= 0",
            ],
        ),
        ("default: 9\nrules:\n  - proposition: a\n", ["rules.yaml:3: rules[0].value: required"]),
        ("default: 9\nrules: {a: 1}\n", ["rules.yaml:2: rules: must be a list"]),
        ("default: [9\n", ["rules.yaml:2: YAML syntax error"]),
        ("default: 9\ndefault: 8\n", ["rules.yaml:2: default: duplicate key 'default' (first set on line 1)"]),
        ("- 1\n", ["rules.yaml:1: the file must hold a mapping"]),
    ],
)
def test_file_errors_name_file_and_line(write_rules: WriteRules, text: str, expected: list[str]) -> None:
    path = write_rules(text)
    with pytest.raises(PropositionFileError) as caught:
        ScriptedJudge.from_file(path)
    messages = [str(issue).replace(str(path), "rules.yaml") for issue in caught.value.issues]
    assert len(messages) == len(expected)
    for message, prefix in zip(sorted(messages), sorted(expected), strict=True):
        assert message.startswith(prefix), message


def test_unsafe_yaml_tags_are_rejected(write_rules: WriteRules) -> None:
    path = write_rules("default: !!python/object/apply:os.system ['true']\n")
    said = r"rules.yaml:1: default: cannot read this value: unsupported tag 'tag:yaml\.org,2002:python/object/apply"
    with pytest.raises(PropositionFileError, match=said):
        ScriptedJudge.from_file(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="cannot read"):
        ScriptedJudge.from_file(tmp_path / "absent.yaml")


def test_from_rules_validates_too() -> None:
    with pytest.raises(PropositionFileError, match="default"):
        ScriptedJudge.from_rules({"rules": []})
