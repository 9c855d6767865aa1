"""The action gate: every decision outcome, parallel checks with deadlines, fail-open errors, feedback."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.checks import prepare
from engine.errors import JudgeOutputError
from engine.gate import (
    AttemptResult,
    AttemptSummary,
    Decision,
    DimensionCheck,
    Outcome,
    SimilarityCheck,
    build_feedback,
    decide,
    gate_active,
    run_checks,
)
from engine.judges.base import JudgeRequest, JudgeResult
from engine.judges.scripted import ScriptedJudge
from engine.models import AgentConfig, Dimension, Event
from engine.propositions import Proposition, PropositionSet
from engine.scoring import ScoringTarget

CheckFactory = Callable[..., DimensionCheck]
ResultFactory = Callable[..., AttemptResult]
ConfigFactory = Callable[..., AgentConfig]
PsetFactory = Callable[..., dict[Dimension, PropositionSet]]

SAY_LITTLE = re.compile(r"say (very )?little.*act(ing)? poorly", re.IGNORECASE | re.DOTALL)


# --- factories ------------------------------------------------------------------------------------------


def _check(
    dimension: Dimension = Dimension.ADHERENCE, score: float = 8.0, threshold: float = 7.0, **fields: Any
) -> DimensionCheck:
    fields.setdefault("passed", score >= threshold)
    return DimensionCheck(dimension=dimension, score=score, threshold=threshold, **fields)


def _result(attempt: int = 1, *checks: DimensionCheck, similarity: SimilarityCheck | None = None) -> AttemptResult:
    return AttemptResult(attempt=attempt, text=f"draft {attempt}", checks=checks, similarity=similarity)


@pytest.fixture
def make_check() -> CheckFactory:
    """make_check(dimension, score, threshold=7, **fields); ``passed`` follows score >= threshold."""
    return _check


@pytest.fixture
def make_result() -> ResultFactory:
    """make_result(attempt, *checks, similarity=None); the text is ``draft <attempt>``."""
    return _result


@pytest.fixture
def make_config() -> ConfigFactory:
    """make_config(**fields): adherence and fluency on, everything else at its default."""

    def make(**fields: Any) -> AgentConfig:
        return AgentConfig(**{"gate_adherence_enabled": True, "gate_fluency_enabled": True, **fields})

    return make


@pytest.fixture
def make_psets() -> PsetFactory:
    """make_psets(*dimensions): one proposition ``<dimension>-p`` per dimension, with a recommendation."""

    def make(*dimensions: Dimension) -> dict[Dimension, PropositionSet]:
        chosen = dimensions or (Dimension.ADHERENCE, Dimension.FLUENCY)
        return {
            d: PropositionSet(
                dimension=d,
                agent_id="michael",
                propositions=(
                    Proposition(
                        id=f"{d.value}-p",
                        claim="{{agent_name}} says {{action}} well",
                        recommendations_for_improvement=f"improve your {d.value}",
                    ),
                ),
            )
            for d in chosen
        }

    return make


@pytest.fixture
def target() -> ScoringTarget:
    return ScoringTarget(
        target_name="Michael Scott",
        agent_id="michael",
        events=(Event("michael", "Michael Scott", "Hello everyone"),),
        action="the cat sat on the mat",
    )


def scripted(*rules: Mapping[str, Any], default: int = 9) -> ScriptedJudge:
    return ScriptedJudge.from_rules({"default": default, "rules": list(rules)})


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
    current = _result(attempts, _check(score=last / 4, threshold=9.5))  # always fails
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
    verdict = decide(_result(attempt, _check(score=8 if passes else 2)), [], config)
    if passes:
        assert verdict.decision is Decision.COMMIT
    elif attempt <= corrections:
        assert verdict.decision is Decision.RETRY and verdict.feedback
    else:
        assert verdict.decision is (Decision.COMMIT if keep_going else Decision.REJECT)
    assert (verdict.feedback is not None) == (verdict.decision is Decision.RETRY)


# --- run_checks -----------------------------------------------------------------------------------------


def _slow_rules(delay: float = 0.3) -> ScriptedJudge:
    return scripted(
        {"proposition": "adherence-*", "value": 8, "delay_s": delay},
        {"proposition": "fluency-*", "value": 8, "delay_s": delay},
    )


async def test_dimensions_are_judged_in_parallel(
    make_psets: PsetFactory, make_config: ConfigFactory, target: ScoringTarget
) -> None:
    judge = _slow_rules()
    started = time.perf_counter()
    result = await run_checks(judge, make_psets(), target, make_config(), attempt=1, recent=[])
    elapsed = time.perf_counter() - started
    assert elapsed < 0.5
    assert [c.dimension for c in result.checks] == [Dimension.ADHERENCE, Dimension.FLUENCY]
    assert all(c.passed and not c.timed_out and c.score == 8 for c in result.checks)
    assert judge.log.count() == 2 == result.judge_calls


async def test_dimensions_run_in_turn_when_not_parallel(
    make_psets: PsetFactory, make_config: ConfigFactory, target: ScoringTarget
) -> None:
    started = time.perf_counter()
    result = await run_checks(_slow_rules(), make_psets(), target, make_config(), attempt=1, recent=[], parallel=False)
    assert time.perf_counter() - started >= 0.6
    assert len(result.checks) == 2 and result.passed


async def test_a_dimension_past_its_deadline_passes_as_timed_out(
    make_psets: PsetFactory, make_config: ConfigFactory, target: ScoringTarget
) -> None:
    judge = scripted(
        {"proposition": "adherence-*", "value": 1, "delay_s": 2.0}, {"proposition": "fluency-*", "value": 3}
    )
    started = time.perf_counter()
    result = await run_checks(judge, make_psets(), target, make_config(), attempt=1, recent=[], deadline_s=0.1)
    assert time.perf_counter() - started < 1.0  # the slow judge is not awaited
    adherence, fluency = result.checks
    assert adherence.timed_out and adherence.passed and adherence.error is None
    assert not fluency.timed_out and not fluency.passed and fluency.score == 3
    assert fluency.recommendations == ("improve your fluency",)


class BrokenJudge:
    """A judge whose every answer is malformed."""

    name = "broken"

    async def evaluate(self, request: JudgeRequest) -> JudgeResult:
        raise JudgeOutputError("the judge answered 'eleven' instead of a score")


async def test_a_judge_error_fails_open_and_is_recorded(
    make_psets: PsetFactory, make_config: ConfigFactory, target: ScoringTarget
) -> None:
    result = await run_checks(BrokenJudge(), make_psets(), target, make_config(), attempt=1, recent=[])
    assert result.passed
    for check in result.checks:
        assert check.passed
        assert check.error is not None and "eleven" in check.error
    assert decide(result, [], make_config()).outcome is Outcome.TIMEOUT_PASS_THROUGH


async def test_thresholds_are_per_dimension(
    make_psets: PsetFactory, make_config: ConfigFactory, target: ScoringTarget
) -> None:
    config = make_config(gate_adherence_threshold=5.0, gate_fluency_threshold=7.0)
    result = await run_checks(scripted(default=6), make_psets(), target, config, attempt=1, recent=[])
    assert [(c.dimension, c.passed, c.threshold) for c in result.checks] == [
        (Dimension.ADHERENCE, True, 5.0),
        (Dimension.FLUENCY, False, 7.0),
    ]


async def test_only_enabled_dimensions_with_propositions_are_judged(
    make_psets: PsetFactory, target: ScoringTarget
) -> None:
    psets = make_psets(Dimension.ADHERENCE, Dimension.FLUENCY)
    psets[Dimension.FLUENCY] = PropositionSet(dimension=Dimension.FLUENCY)  # enabled, but empty
    config = AgentConfig(gate_fluency_enabled=True, gate_suitability_enabled=True)  # suitability: no set
    judge = scripted()
    result = await run_checks(judge, psets, target, config, attempt=1, recent=[])
    assert result.checks == () and judge.log.count() == 0 and result.passed


@pytest.mark.parametrize(
    ("recent", "passes", "score"),
    [
        (["Cat, sat... MAT!"], False, 1.0),  # case and punctuation do not count
        (["cat sat mat dog bird"], False, 0.6),  # 3 shared of 5 distinct words: exactly the threshold fails
        (["cat sat dog bird"], True, 0.4),
        ([], True, 0.0),
    ],
)
async def test_similarity_fails_at_the_threshold(recent: list[str], passes: bool, score: float) -> None:
    config = AgentConfig(gate_similarity_enabled=True, max_action_similarity=0.6)
    draft = ScoringTarget(target_name="M", action="cat sat mat")
    texts = ["unrelated words entirely", *recent]
    result = await run_checks(scripted(), {}, draft, config, attempt=1, recent=[prepare(t) for t in texts])
    assert result.similarity is not None
    assert result.similarity.passed is passes and result.passed is passes
    assert result.similarity.score == pytest.approx(score)
    assert result.similarity.most_similar == (recent[0] if recent else None)


async def test_similarity_names_the_most_similar_recent_message(target: ScoringTarget) -> None:
    config = AgentConfig(gate_similarity_enabled=True)
    recent = [prepare(t) for t in ("the cat is here", "the cat sat on the mat today", "a dog barked")]
    result = await run_checks(scripted(), {}, target, config, attempt=1, recent=recent)
    assert result.similarity is not None
    assert result.similarity.most_similar == "the cat sat on the mat today"
    assert not result.similarity.passed


# --- feedback -------------------------------------------------------------------------------------------


def _failed(attempt: int) -> AttemptResult:
    return _result(
        attempt,
        _check(Dimension.ADHERENCE, 3.5, reasoning="sounds like a bland assistant", recommendations=("Be louder.",)),
        _check(Dimension.SUITABILITY, 4.0, reasoning="off topic", recommendations=("Answer Jim.", "Stay short.")),
        _check(Dimension.FLUENCY, 8.0, reasoning="reads smoothly"),
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
    result = _result(1, _check(score=2), similarity=SimilarityCheck(0.1, 0.6, True, "an older message"))
    assert "an older message" not in build_feedback(result, make_config())


def test_escalation_grows_with_the_attempt_number(make_config: ConfigFactory) -> None:
    config = make_config(max_correction_attempts=2)
    first, second = build_feedback(_failed(1), config), build_feedback(_failed(2), config)
    assert first != second.replace("draft 2", "draft 1")
    assert "radical" not in first.lower() and "radical" in second.lower()
    assert len(second) > len(first)
    assert not SAY_LITTLE.search(first)
    assert SAY_LITTLE.search(second)  # the feedback before the last attempt


@given(st.integers(1, 8))
def test_the_feedback_before_the_last_attempt_says_little_beats_acting_poorly(corrections: int) -> None:
    config = AgentConfig(max_correction_attempts=corrections)
    last = build_feedback(_failed(corrections), config)  # the last attempt that can still be corrected
    assert SAY_LITTLE.search(last)
    if corrections > 2:
        assert not SAY_LITTLE.search(build_feedback(_failed(1), config))


@given(st.integers(2, 8))
def test_escalation_never_weakens(corrections: int) -> None:
    config = AgentConfig(max_correction_attempts=corrections)
    lengths = [len(build_feedback(_failed(a), config).replace(f"draft {a}", "")) for a in range(1, corrections + 1)]
    assert lengths == sorted(lengths)


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
