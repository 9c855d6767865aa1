"""TinyTroupe fidelity of the gate's decision: silence passes, best attempt with timeouts, the minimum of actions."""

from __future__ import annotations

import pytest

from engine.gate import AttemptSummary, decide, pre_decision
from engine.models import AgentConfig, Decision, Dimension, Outcome
from tests.engine.conftest import CheckFactory, ResultFactory

GATED = AgentConfig(gate_adherence_enabled=True)


def test_a_timed_out_dimension_counts_at_its_threshold_in_the_total(
    make_result: ResultFactory, make_check: CheckFactory
) -> None:
    timed_out = make_check(Dimension.ADHERENCE, 0.0, threshold=7.0, passed=True, timed_out=True)
    current = make_result(2, timed_out, make_check(Dimension.FLUENCY, 4.0))
    assert current.total_score == pytest.approx(11.0)  # 7 (threshold) + 4, not 0 + 4
    # attempt 1 totalled 10: the slow judge on attempt 2 must not make attempt 1 look better
    verdict = decide(current, [AttemptSummary(1, "draft 1", 10.0)], AgentConfig(max_correction_attempts=1))
    assert (verdict.outcome, verdict.committed_attempt, verdict.text) == (Outcome.FORCED_THROUGH, 2, "draft 2")


def test_skip_passes_at_once_and_commits_nothing() -> None:
    verdict = pre_decision(skip=True, config=GATED, prior_actions=5, attempt=2, text="whatever")
    assert verdict is not None
    assert (verdict.decision, verdict.outcome, verdict.text, verdict.committed_attempt) == (
        Decision.SKIP, Outcome.SKIPPED, "", None,
    )  # fmt: skip


def test_skip_passes_even_when_the_gate_is_off_or_warming_up() -> None:
    for config in (AgentConfig(gate_enabled=False), GATED.with_changes({"minimum_required_qty_of_actions": 9})):
        verdict = pre_decision(skip=True, config=config, prior_actions=0, attempt=1, text="")
        assert verdict is not None and verdict.outcome is Outcome.SKIPPED


@pytest.mark.parametrize(("prior", "gated"), [(0, False), (2, False), (3, True), (10, True)])
def test_fewer_committed_actions_than_the_minimum_are_not_gated_yet(prior: int, gated: bool) -> None:
    config = GATED.with_changes({"minimum_required_qty_of_actions": 3})
    verdict = pre_decision(skip=False, config=config, prior_actions=prior, attempt=1, text="hello")
    if gated:
        assert verdict is None  # the checks run
    else:
        assert verdict is not None
        assert (verdict.decision, verdict.outcome, verdict.text, verdict.committed_attempt) == (
            Decision.COMMIT, Outcome.NOT_GATED_YET, "hello", 1,
        )  # fmt: skip


def test_minimum_zero_gates_from_the_first_action() -> None:
    assert pre_decision(skip=False, config=GATED, prior_actions=0, attempt=1, text="hi") is None


def test_an_inactive_gate_passes_without_the_minimum_mark() -> None:
    config = AgentConfig(gate_enabled=False, minimum_required_qty_of_actions=5)
    verdict = pre_decision(skip=False, config=config, prior_actions=0, attempt=1, text="hi")
    assert verdict is not None and verdict.outcome is Outcome.PASSED
