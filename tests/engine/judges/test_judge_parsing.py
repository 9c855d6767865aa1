from __future__ import annotations

import json

import pytest

from engine.errors import JudgeOutputError
from engine.judges.base import JudgeMode
from engine.judges.parsing import extract_json_object, parse_answers
from ops.fakes.judge_requests import make_request


def test_extracts_a_fenced_object() -> None:
    text = 'Here you go:\n```json\n{"reasoning": "r", "value": 3}\n```\nThanks.'
    assert extract_json_object(text) == {"reasoning": "r", "value": 3}


def test_skips_braces_that_are_not_json() -> None:
    assert extract_json_object('set {a, b} then {"value": 1}') == {"value": 1}


def test_no_object_is_an_error() -> None:
    with pytest.raises(JudgeOutputError, match="no JSON object"):
        extract_json_object("seven out of nine")


def test_individual_score() -> None:
    request = make_request()
    (answer,) = parse_answers('{"reasoning": "fits the persona", "value": 7}', request)
    assert answer.claim_id == request.claims[0].id
    assert answer.value == 7 and answer.reasoning == "fits the persona"


@pytest.mark.parametrize("value", [7.0, "7", True, 10, -1, None])
def test_score_values_must_be_ints_from_0_to_9(value: object) -> None:
    text = json.dumps({"reasoning": "r", "value": value})
    with pytest.raises(JudgeOutputError, match="whole number from 0 to 9"):
        parse_answers(text, make_request())


def test_missing_reasoning_or_value() -> None:
    with pytest.raises(JudgeOutputError, match="reasoning"):
        parse_answers('{"value": 5}', make_request())
    with pytest.raises(JudgeOutputError, match='no "value"'):
        parse_answers('{"reasoning": "r"}', make_request())


def test_check_values_are_booleans() -> None:
    (answer,) = parse_answers('{"reasoning": "r", "value": false}', make_request(JudgeMode.CHECK))
    assert answer.value is False
    with pytest.raises(JudgeOutputError, match="true or false"):
        parse_answers('{"reasoning": "r", "value": 0}', make_request(JudgeMode.CHECK))


def test_enumerate_counts_items() -> None:
    request = make_request(JudgeMode.ENUMERATE)
    (answer,) = parse_answers('{"reasoning": "r", "items": ["a", "b", "c"], "value": 3}', request)
    assert answer.value == 3 and answer.items == ("a", "b", "c")
    (no_value,) = parse_answers('{"reasoning": "r", "items": []}', request)
    assert no_value.value == 0
    with pytest.raises(JudgeOutputError, match="must equal the number of items"):
        parse_answers('{"reasoning": "r", "items": ["a"], "value": 2}', request)
    with pytest.raises(JudgeOutputError, match="list of strings"):
        parse_answers('{"reasoning": "r", "items": [1, 2], "value": 2}', request)


def batch_text(values: dict[str, object]) -> str:
    return json.dumps({"results": [{"id": k, "reasoning": f"about {k}", "value": v} for k, v in values.items()]})


def test_batch_answers_follow_the_claim_order() -> None:
    request = make_request(claims=3)
    ids = [c.id for c in request.claims]
    answers = parse_answers(batch_text({ids[2]: 1, ids[0]: 5, ids[1]: 9}), request)
    assert [(a.claim_id, a.value) for a in answers] == [(ids[0], 5), (ids[1], 9), (ids[2], 1)]
    assert answers[2].reasoning == f"about {ids[2]}"


def test_batch_must_answer_exactly_the_requested_ids() -> None:
    request = make_request(claims=3)
    ids = [c.id for c in request.claims]
    with pytest.raises(JudgeOutputError, match="no answer for claim ids"):
        parse_answers(batch_text({ids[0]: 1, ids[1]: 2}), request)
    with pytest.raises(JudgeOutputError, match="unknown id"):
        parse_answers(batch_text({ids[0]: 1, ids[1]: 2, ids[2]: 3, "extra": 4}), request)
    duplicate = json.dumps(
        {
            "results": [{"id": ids[0], "reasoning": "r", "value": 1}] * 2
            + [{"id": i, "reasoning": "r", "value": 1} for i in ids[1:]]
        }
    )
    with pytest.raises(JudgeOutputError, match="more than once"):
        parse_answers(duplicate, request)
    with pytest.raises(JudgeOutputError, match='"results" list'):
        parse_answers('{"reasoning": "r", "value": 3}', request)
