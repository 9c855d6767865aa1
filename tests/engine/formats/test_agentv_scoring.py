"""AgentV scoring: verdict boundaries, the weighted mean, all three trajectory modes on hand-made traces,
rubric and LLM-judge scores through the judge layer, and the deterministic metric evaluators."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from engine.formats.agentv.codejudge import Observed
from engine.formats.agentv.evaluate import evaluate, evaluate_case
from engine.formats.agentv.model import EvalCase, EvaluatorSpec, ExpectedTool, Rubric
from engine.formats.agentv.scoring import EvaluatorResult, tool_trajectory, verdict_of, weighted_mean
from engine.formats.targets import TargetAnswer, ToolCall
from engine.judges.base import ClaimAnswer, JudgeMode, JudgeRequest, JudgeResult
from engine.models import TokenUsage


@pytest.mark.parametrize(
    ("score", "verdict"),
    [(0.0, "fail"), (0.5999999, "fail"), (0.6, "borderline"), (0.7999999, "borderline"), (0.8, "pass"), (1.0, "pass")],
)
def test_verdict_boundaries_are_inclusive_at_0_6_and_0_8(score: float, verdict: str) -> None:
    assert verdict_of(score) == verdict


def r(score: float, weight: float) -> EvaluatorResult:
    return EvaluatorResult("x", "llm_judge", score, weight)


def test_weighted_mean_excludes_weight_zero_and_all_zero_is_zero() -> None:
    assert weighted_mean([r(1.0, 3.0), r(0.5, 1.0)]) == pytest.approx(0.875)
    assert weighted_mean([r(1.0, 1.0), r(0.0, 0.0)]) == 1.0
    assert weighted_mean([r(1.0, 0.0), r(0.7, 0.0)]) == 0.0
    assert weighted_mean([]) == 0.0


def spec(mode: str, expected: tuple[ExpectedTool, ...] = (), minimums: dict[str, int] | None = None) -> EvaluatorSpec:
    return EvaluatorSpec("traj", "tool_trajectory", config={"mode": mode}, expected=expected, minimums=minimums or {})


def calls(*items: tuple[str, object]) -> tuple[ToolCall, ...]:
    return tuple(ToolCall(tool, args) for tool, args in items)


def test_any_order_scores_the_fraction_of_tools_meeting_their_minimum() -> None:
    trace = calls(("search", None), ("fetch", None), ("search", None))
    result = tool_trajectory(spec("any_order", minimums={"search": 2, "fetch": 1, "report": 1}), trace)
    assert result.score == pytest.approx(2 / 3)
    assert result.verdict == "borderline"
    assert result.misses == ("report: called 0 times (required ≥1)",)


def test_in_order_is_a_greedy_forward_scan_with_gaps_allowed() -> None:
    expected = (ExpectedTool("a"), ExpectedTool("c"), ExpectedTool("b"))
    trace = calls(("a", None), ("x", None), ("b", None), ("c", None))
    result = tool_trajectory(spec("in_order", expected), trace)
    # a at 0, c at 3, then nothing left for b: the scan never goes back
    assert result.score == pytest.approx(2 / 3)
    assert result.hits == ("Found a at position 0", "Found c at position 3")
    assert result.misses == ("Expected b at position 2, not found in remaining trace",)


def test_in_order_argument_mismatch_spends_the_call_and_misses() -> None:
    expected = (
        ExpectedTool("search", {"query": "weather Paris"}),
        ExpectedTool("get_weather", {"location": "Paris"}),
    )
    trace = calls(
        ("search", {"query": "weather Paris", "limit": 5}),  # partial match: extra keys are fine
        ("get_weather", {"location": "London"}),
        ("get_weather", {"location": "Paris"}),
    )
    result = tool_trajectory(spec("in_order", expected), trace)
    assert result.score == 0.5
    assert result.misses == ("Expected get_weather at position 1: found at 1 but args mismatch",)


def test_args_any_and_nested_deep_equality() -> None:
    expected = (ExpectedTool("load", {"source": {"table": "customers", "ids": [1, 2]}}), ExpectedTool("save", "any"))
    good = calls(("load", {"source": {"table": "customers", "ids": [1, 2]}}), ("save", {"whatever": True}))
    bad = calls(("load", {"source": {"table": "customers", "ids": [1, 2, 3]}}), ("save", None))
    assert tool_trajectory(spec("in_order", expected), good).score == 1.0
    assert tool_trajectory(spec("in_order", expected), bad).score == 0.5


def test_exact_compares_position_by_position_and_notes_extra_calls() -> None:
    expected = (ExpectedTool("check"), ExpectedTool("token"), ExpectedTool("audit"))
    extra = calls(("check", None), ("token", None), ("audit", None), ("audit", None))
    result = tool_trajectory(spec("exact", expected), extra)
    assert result.score == 1.0
    assert result.misses == ("Expected 3 tool calls, got 4",)
    swapped = calls(("check", None), ("audit", None), ("token", None))
    result = tool_trajectory(spec("exact", expected), swapped)
    assert result.score == pytest.approx(1 / 3)
    assert result.misses == ("Position 1: expected token, got audit", "Position 2: expected audit, got token")
    short = tool_trajectory(spec("exact", expected), calls(("check", None)))
    assert short.score == pytest.approx(1 / 3)
    assert short.misses[-1] == "Position 2: expected audit, got nothing"


def test_no_tool_calls_scores_zero() -> None:
    assert tool_trajectory(spec("any_order", minimums={"a": 1}), ()).score == 0.0


# -- judged evaluators -------------------------------------------------------------------------------------


@dataclass
class FakeJudge:
    """Answers rubric checks from a set of satisfied rubric ids and scores from a fixed value."""

    satisfied: set[str] = field(default_factory=set)
    score: int = 9
    requests: list[JudgeRequest] = field(default_factory=list)
    name: str = "fake"

    async def evaluate(self, request: JudgeRequest) -> JudgeResult:
        self.requests.append(request)
        answers = []
        for claim in request.claims:
            if request.mode is JudgeMode.CHECK:
                value: int | bool = claim.id.rsplit("/", 1)[-1] in self.satisfied
            else:
                value = self.score
            answers.append(ClaimAnswer(claim.id, value, f"because {claim.id}"))
        return JudgeResult(tuple(answers), self.name)


def case(*evaluators: EvaluatorSpec) -> EvalCase:
    return EvalCase("c1", "Dwight mentions beets", ({"role": "user", "content": "weekend?"},), evaluators=evaluators)


def observed(text: str = "Beets.", tool_calls: tuple[ToolCall, ...] = (), usage: TokenUsage | None = None) -> Observed:
    return Observed(TargetAnswer("c1", text, "t", tool_calls, usage=usage or TokenUsage()), duration_ms=120.0)


RUBRICS = (
    Rubric("beets", "Mentions beets", 2.0, True),
    Rubric("rank", "Asserts rank", 1.0, False),
    Rubric("farm", "Mentions the farm", 1.0, True),
)


async def test_rubric_score_is_satisfied_weight_over_total() -> None:
    judge = FakeJudge(satisfied={"beets", "farm"})
    result = await evaluate(EvaluatorSpec("r", "rubric", rubrics=RUBRICS), case(), observed(), judge)
    assert result.score == 0.75
    assert result.verdict == "borderline"
    assert [c.id for c in judge.requests[0].claims] == ["c1/r/beets", "c1/r/rank", "c1/r/farm"]
    assert judge.requests[0].action == "Beets."


async def test_an_unmet_required_rubric_fails_whatever_the_score() -> None:
    result = await evaluate(
        EvaluatorSpec("r", "rubric", rubrics=RUBRICS), case(), observed(), FakeJudge({"beets", "rank"})
    )
    assert result.score == 0.75
    assert result.verdict == "fail"
    assert result.misses == ("[farm] Mentions the farm: because c1/r/farm",)


async def test_llm_judge_scales_the_judges_0_to_9_score() -> None:
    result = await evaluate(EvaluatorSpec("j", "llm_judge"), case(), observed(), FakeJudge(score=6))
    assert result.score == pytest.approx(6 / 9)
    assert result.reasoning == "because c1/j"


async def test_a_case_without_evaluators_gets_one_default_llm_judge() -> None:
    results = await evaluate_case(case(), observed(), FakeJudge(score=9))
    assert [(x.name, x.type, x.score) for x in results] == [("llm_judge", "llm_judge", 1.0)]


async def test_judged_evaluators_without_a_judge_score_zero_with_the_reason() -> None:
    result = await evaluate(EvaluatorSpec("j", "llm_judge"), case(), observed(), None)
    assert (result.score, result.error) == (0.0, "llm_judge needs a judge (--judge)")


class CrashingJudge:
    name = "crash"

    async def evaluate(self, request: JudgeRequest) -> JudgeResult:
        raise RuntimeError("judge fell over")


async def test_a_crashing_evaluator_counts_zero_at_its_weight() -> None:
    traj = EvaluatorSpec("t", "tool_trajectory", weight=1.0, config={"mode": "any_order"}, minimums={"a": 1})
    crash = EvaluatorSpec("j", "llm_judge", weight=3.0)
    results = await evaluate_case(case(traj, crash), observed(tool_calls=calls(("a", None))), CrashingJudge())
    assert [(x.score, x.weight) for x in results] == [(1.0, 1.0), (0.0, 3.0)]
    assert results[1].error == "evaluator crashed: RuntimeError: judge fell over"
    assert weighted_mean(results) == 0.25


async def test_metric_evaluators_compare_against_their_limits() -> None:
    latency = EvaluatorSpec("l", "latency", config={"threshold": 100})
    cost = EvaluatorSpec("c", "cost", config={"budget": 0.1})
    tokens = EvaluatorSpec("t", "token_usage", config={"max_total": 50, "max_output": 10})
    seen = observed(usage=TokenUsage(input_tokens=30, output_tokens=12))
    results = await evaluate_case(case(latency, cost, tokens), seen, None)
    assert [x.score for x in results] == [0.0, 0.0, 0.0]
    assert results[0].misses == ("duration ms 120 (limit 100)",)
    assert results[1].misses == ("no cost USD reported by the target",)
    assert (results[2].hits, results[2].misses) == (("Total tokens 42 <= 50",), ("Output tokens 12 > 10",))
    within = await evaluate_case(case(tokens), observed(usage=TokenUsage(input_tokens=30, output_tokens=9)), None)
    assert within[0].score == 1.0


async def test_field_accuracy_matches_exact_numeric_and_date_fields() -> None:
    fields = [
        {"path": "invoice_number", "match": "exact", "weight": 2},
        {"path": "total", "match": "numeric_tolerance", "tolerance": 1.0},
        {"path": "date", "match": "date", "formats": ["DD-MMM-YYYY"]},
        {"path": "lines[0].sku", "match": "exact"},
    ]
    reference = {"invoice_number": "A-1", "total": 100.0, "date": "2025-01-15", "lines": [{"sku": "X"}]}
    evaluated = EvalCase("c1", "o", ({"role": "user", "content": "q"},), ({"role": "assistant", "content": reference},))
    answer = '```json\n{"invoice_number": "A-1", "total": 100.9, "date": "15-Jan-2025", "lines": [{"sku": "Y"}]}\n```'
    result = await evaluate(
        EvaluatorSpec("f", "field_accuracy", config={"fields": fields}), evaluated, observed(answer), None
    )
    assert result.score == 0.8
    assert result.misses == ("lines[0].sku: expected 'X', got 'Y'",)


async def test_composite_weighted_average_uses_the_aggregator_weights() -> None:
    children = (
        EvaluatorSpec("safety", "llm_judge"),
        EvaluatorSpec("traj", "tool_trajectory", config={"mode": "any_order"}, minimums={"a": 1}),
    )
    composite = EvaluatorSpec(
        "gate",
        "composite",
        config={"aggregator": {"type": "weighted_average", "weights": {"safety": 0.3, "traj": 0.7}}},
        children=children,
    )
    result = await evaluate(composite, case(), observed(), FakeJudge(score=9))
    assert result.score == pytest.approx(0.3)
    assert [(c.name, c.score) for c in result.children] == [("safety", 1.0), ("traj", 0.0)]


async def test_composite_llm_judge_aggregator_asks_the_judge_with_the_childrens_results() -> None:
    children = (EvaluatorSpec("concise", "llm_judge"), EvaluatorSpec("detail", "llm_judge"))
    composite = EvaluatorSpec("final", "composite", config={"aggregator": {"type": "llm_judge"}}, children=children)
    judge = FakeJudge(score=6)
    result = await evaluate(composite, case(), observed(), judge)
    assert result.score == pytest.approx(6 / 9)
    assert [c.name for c in result.children] == ["concise", "detail"]
    last = judge.requests[-1]
    assert last.claims[0].id == "c1/final"
    assert last.supplementary is not None and "- concise: 0.67 (borderline) because c1/concise" in last.supplementary
