"""The gate's decision on an attempt: every outcome, the best attempt forced through, and when the gate is active."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.gate import AttemptSummary, SimilarityCheck, decide, gate_active
from engine.models import AgentConfig, Decision, Dimension, Outcome
from tests.engine.conftest import CheckFactory, ResultFactory, build_check, build_result


def failing_similarity(score: float = 0.9) -> SimilarityCheck:
    return SimilarityCheck(score=score, threshold=0.6, passed=False, most_similar="an old message")


# --- decide ---------------------------------------------------------------------------------------------


def test_passing_first_attempt_commits_as_passed(make_result: ResultFactory, make_check: CheckFactory) -> None:
    verdict = decide(make_result(1, make_check(score=8)), [], AgentConfig())
    assert (verdict.decision, verdict.outcome) == (Decision.COMMIT, Outcome.PASSED)
    assert (verdict.text, verdict.committed_attempt, verdict.feedback) == ("draft 1", 1, None)


def test_passing_a_later_attempt_is_passed_after_retry(make_result: ResultFactory, make_check: CheckFactory) -> None:
    verdict = decide(make_result(2, make_check(score=8)), [AttemptSummary(1, "draft 1", 3.0)], AgentConfig())
    assert (verdict.decision, verdict.outcome) == (Decision.COMMIT, Outcome.PASSED_AFTER_RETRY)
    assert (verdict.text, verdict.committed_attempt) == ("draft 2", 2)


def test_every_dimension_timed_out_passes_through(make_result: ResultFactory, make_check: CheckFactory) -> None:
    timed_out = [make_check(d, 0.0, passed=True, timed_out=True) for d in (Dimension.ADHERENCE, Dimension.FLUENCY)]
    verdict = decide(make_result(1, *timed_out), [], AgentConfig())
    assert (verdict.decision, verdict.outcome) == (Decision.COMMIT, Outcome.TIMEOUT_PASS_THROUGH)
    assert verdict.committed_attempt == 1


def test_one_timeout_beside_a_real_pass_is_a_plain_pass(make_result: ResultFactory, make_check: CheckFactory) -> None:
    checks = (make_check(Dimension.ADHERENCE, 0.0, passed=True, timed_out=True), make_check(Dimension.FLUENCY, 8))
    assert decide(make_result(1, *checks), [], AgentConfig()).outcome is Outcome.PASSED


def test_timeouts_do_not_excuse_a_failed_similarity(make_result: ResultFactory, make_check: CheckFactory) -> None:
    result = make_result(1, make_check(score=0.0, passed=True, timed_out=True), similarity=failing_similarity())
    assert decide(result, [], AgentConfig()).outcome is Outcome.CORRECTED


@pytest.mark.parametrize("attempt", [1, 2])
def test_failure_with_attempts_left_is_corrected_with_feedback(
    attempt: int, make_result: ResultFactory, make_check: CheckFactory
) -> None:
    verdict = decide(make_result(attempt, make_check(score=3)), [], AgentConfig(max_correction_attempts=2))
    assert (verdict.decision, verdict.outcome, verdict.committed_attempt) == (Decision.RETRY, Outcome.CORRECTED, None)
    assert verdict.feedback is not None and "draft" in verdict.feedback


def test_exhausted_attempts_force_through_the_best_attempt(
    make_result: ResultFactory, make_check: CheckFactory
) -> None:
    earlier = [AttemptSummary(1, "draft 1", 10.0), AttemptSummary(2, "draft 2", 13.0)]
    current = make_result(3, make_check(Dimension.ADHERENCE, 6.0), make_check(Dimension.FLUENCY, 6.5))
    verdict = decide(current, earlier, AgentConfig(max_correction_attempts=2))
    assert (verdict.decision, verdict.outcome) == (Decision.COMMIT, Outcome.FORCED_THROUGH)
    assert (verdict.text, verdict.committed_attempt) == ("draft 2", 2)


def test_the_current_attempt_can_be_the_best(make_result: ResultFactory, make_check: CheckFactory) -> None:
    earlier = [AttemptSummary(1, "draft 1", 4.0)]
    verdict = decide(make_result(2, make_check(score=6.0)), earlier, AgentConfig(max_correction_attempts=1))
    assert (verdict.outcome, verdict.text, verdict.committed_attempt) == (Outcome.FORCED_THROUGH, "draft 2", 2)


@given(st.lists(st.integers(0, 36), min_size=1, max_size=6), st.integers(0, 36))
def test_forced_through_takes_the_highest_total_and_the_earliest_on_ties(totals: list[int], last: int) -> None:
    attempts = len(totals) + 1
    earlier = [AttemptSummary(i + 1, f"draft {i + 1}", float(t)) for i, t in enumerate(totals)]
    current = build_result(attempts, build_check(score=last / 4, threshold=9.5))  # always fails
    verdict = decide(current, earlier, AgentConfig(max_correction_attempts=attempts - 1))
    all_totals = [*totals, last / 4]
    expected = all_totals.index(max(all_totals)) + 1
    assert verdict.outcome is Outcome.FORCED_THROUGH
    assert (verdict.committed_attempt, verdict.text) == (expected, f"draft {expected}")


def test_similarity_does_not_add_to_the_total(make_result: ResultFactory, make_check: CheckFactory) -> None:
    # with similarity (0.9) added, attempt 2 would total 12.4 and beat attempt 1's 12.0
    current = make_result(2, make_check(score=5.5), make_check(Dimension.FLUENCY, 6.0), similarity=failing_similarity())
    assert current.total_score == pytest.approx(11.5)
    verdict = decide(current, [AttemptSummary(1, "draft 1", 12.0)], AgentConfig(max_correction_attempts=1))
    assert verdict.committed_attempt == 1


def test_exhausted_attempts_without_continue_on_failure_are_rejected(
    make_result: ResultFactory, make_check: CheckFactory
) -> None:
    config = AgentConfig(max_correction_attempts=2, continue_on_failure=False)
    verdict = decide(make_result(3, make_check(score=1)), [AttemptSummary(1, "draft 1", 20.0)], config)
    assert (verdict.decision, verdict.outcome, verdict.committed_attempt) == (Decision.REJECT, Outcome.REJECTED, None)


def test_no_corrections_allowed_decides_on_the_first_attempt(
    make_result: ResultFactory, make_check: CheckFactory
) -> None:
    verdict = decide(make_result(1, make_check(score=2)), [], AgentConfig(max_correction_attempts=0))
    assert (verdict.outcome, verdict.committed_attempt) == (Outcome.FORCED_THROUGH, 1)


@given(st.integers(1, 8), st.integers(0, 6), st.booleans(), st.booleans())
def test_decision_table(attempt: int, corrections: int, passes: bool, keep_going: bool) -> None:
    config = AgentConfig(max_correction_attempts=corrections, continue_on_failure=keep_going)
    verdict = decide(build_result(attempt, build_check(score=8 if passes else 2)), [], config)
    if passes:
        assert verdict.decision is Decision.COMMIT
    elif attempt <= corrections:
        assert verdict.decision is Decision.RETRY and verdict.feedback
    else:
        assert verdict.decision is (Decision.COMMIT if keep_going else Decision.REJECT)
    assert (verdict.feedback is not None) == (verdict.decision is Decision.RETRY)


# --- gate_active ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "active"),
    [
        ({}, False),
        ({"gate_fluency_enabled": True}, True),
        ({"gate_similarity_enabled": True}, True),
        ({"gate_enabled": False, "gate_fluency_enabled": True, "gate_similarity_enabled": True}, False),
    ],
)
def test_gate_active(fields: dict[str, Any], active: bool) -> None:
    assert gate_active(AgentConfig(**fields)) is active
