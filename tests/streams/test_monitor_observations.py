"""The drift monitor reads every correction log beside the gate; only a first attempt with a score of a monitored
dimension is validated in full and observed. The others (similarity only, later attempts) are skipped after an
orjson read: the same observations as validating every log, for a fraction of the CPU."""

from __future__ import annotations

from typing import Any

import pytest

from streams.services import monitor
from streams.wire.payloads import CorrectionLog, encode
from tests.spies import calls_of

LOGS = "p.correction-logs"


def _log(attempt: int, scores: dict[str, Any]) -> bytes:
    return encode(CorrectionLog(
        draft_id="d1", attempt_number=attempt, agent_id="michael", original_text="t", decision="commit",
        outcome="passed", dimension_scores=scores,
    ))  # fmt: skip


@pytest.fixture
def decoded(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """The calls of ``monitor.decode``: (model, value)."""
    return calls_of(monkeypatch, monitor, "decode")


@pytest.mark.parametrize(
    "value",
    [
        _log(1, {}),  # similarity only
        _log(2, {"adherence": {"score": 3}}),  # a later attempt
        _log(1, {"ideas_quantity": {"score": 3}}),  # a dimension the monitor does not follow
    ],
)
def test_logs_the_monitor_skips_are_not_validated(decoded: list[tuple[Any, ...]], value: bytes) -> None:
    assert monitor.observations(LOGS, 0, 7, value, LOGS) == []
    assert decoded == []


def test_a_first_attempts_scores_are_validated_and_observed(decoded: list[tuple[Any, ...]]) -> None:
    value = _log(1, {"adherence": {"score": 3}, "consistency": {"score": 8, "error": "timed out"}})
    found = monitor.observations(LOGS, 0, 7, value, LOGS)
    assert [(o.agent_id, o.dimension, o.score, o.record) for o in found] == [("michael", "adherence", 3.0, "draft:d1")]
    assert [model for model, _ in decoded] == [CorrectionLog]


@pytest.mark.parametrize("value", [b"not json", b"[]", b'{"dimension_scores": 3}'])
def test_anything_unexpected_is_left_to_the_validation(decoded: list[tuple[Any, ...]], value: bytes) -> None:
    assert monitor.observations(LOGS, 0, 7, value, LOGS) == []
    assert [model for model, _ in decoded] == [CorrectionLog]
