"""``drift tail`` without a broker: records and their rendered lines, the agent filter, an unknown kind."""

from __future__ import annotations

import subprocess
from typing import Any

import orjson

from streams.client.tail import matches, render, to_record
from streams.wire.payloads import DeadLetter, Directives, Verdict, encode
from tests.stack import DRIFT

# -- tail records and lines ----------------------------------------------------------------------------------


def verdict(**changes: Any) -> Verdict:
    fields: dict[str, Any] = {
        "draft_id": "d1", "attempt": 2, "agent_id": "pam", "decision": "retry", "outcome": "corrected",
        "text": "Just a quick note about the art show.", "latency_ms": 41.6,
        "scores": {
            "adherence": {"score": 8.5, "threshold": 7, "passed": True},
            "fluency": {"score": 3.0, "threshold": 7, "passed": False},
            "suitability": {"score": 9, "threshold": 7, "passed": True, "timed_out": True},
        },
        "similarity": {"score": 0.72, "threshold": 0.6, "passed": False},
    }  # fmt: skip
    return Verdict.model_validate({**fields, **changes})


def test_a_verdict_line_shows_agent_decision_and_each_dimension() -> None:
    record = to_record("verdicts", 2, 17, 1_748_779_200_250, b"pam", encode(verdict()))
    line = render(record).plain
    assert line.startswith("12:00:00.250 pam retry/corrected #2")
    assert "adherence 8.50✓" in line and "fluency 3.00✗" in line and "suitability timeout" in line
    assert "similarity 0.72✗" in line and "42ms" in line and "'Just a quick note about the art show.'" in line
    styles = {str(span.style) for span in render(record).spans}
    assert {"green", "red", "yellow"} <= styles


def test_a_record_that_does_not_validate_keeps_its_json_and_says_why() -> None:
    value = orjson.dumps({"agent_id": "pam", "decision": "maybe"})
    record = to_record("verdicts", 0, 3, 0, b"pam", value)
    assert record.payload is None and record.error and "invalid Verdict" in record.error
    assert record.json_line() == value.decode() and record.agent_id == "pam"
    assert "p0@3 invalid record" in render(record).plain
    garbage = to_record("verdicts", 1, 4, 0, b"pam", b"\xff not json")
    assert garbage.json_line() is None and garbage.agent_id == "pam" and garbage.error


def test_agent_filter_matches_directives_addressed_to_the_agent() -> None:
    directives = Directives.model_validate(
        {"run_id": "r", "step": 4, "directives": [{"agent_id": "jim", "kind": "variety", "text": "Try a new idea."}]}
    )
    record = to_record("directives", 0, 0, 0, b"r", encode(directives))
    assert matches(record, "jim") and not matches(record, "pam") and matches(record, None)
    assert "jim variety 'Try a new idea.'" in render(record, "jim").plain
    assert "no directives" in render(record, "pam").plain
    assert matches(to_record("verdicts", 0, 0, 0, b"pam", encode(verdict())), "pam")
    assert not matches(to_record("verdicts", 0, 0, 0, b"pam", encode(verdict())), "jim")


def test_tail_refuses_an_unknown_kind() -> None:
    done = subprocess.run([DRIFT, "tail", "drafts"], capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 2 and "choose one of verdicts, corrections, messages, directives, dlq" in done.stderr


def test_a_dead_letter_line_names_its_source_and_reason() -> None:
    letter = DeadLetter(source_topic="drift.drafts", partition=1, offset=42, key="pam", error="not JSON", raw="eA==")
    record = to_record("dlq", 0, 7, 0, b"pam", encode(letter))
    assert record.payload is not None
    assert "pam dead letter drift.drafts p1@42: not JSON" in render(record).plain
