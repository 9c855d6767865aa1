"""One evaluation pass per step: order, deadline, shared judge calls, failures and the step entry point."""

from __future__ import annotations

from dataclasses import dataclass

from engine.errors import JudgeOutputError
from engine.interventions import (
    DISTINCT_VOICES,
    Intervention,
    SharedJudge,
    builtin_interventions,
    directives_for_step,
    evaluate_step,
    min_messages,
)
from engine.judges.base import JudgeMode, JudgeRequest, JudgeResult
from engine.models import AgentConfig, Event

from .conftest import NAMES, MakeContext, MakeEvents, MakeJudge, persona


@dataclass(frozen=True)
class StepRecord:
    run_id: str
    channel: str
    step: int
    agent_ids: tuple[str, ...]


def fires(name: str, target: str = "michael", claim: str | None = None) -> Intervention:
    intervention = Intervention(target, name=name).set_effect(f"{name} for {{{{agent_name}}}}")
    return intervention.set_textual_precondition(claim) if claim else intervention


async def test_deadline_keeps_finished_directives_and_marks_the_rest_timed_out(
    make_judge: MakeJudge, make_context: MakeContext
) -> None:
    judge = make_judge({"proposition": "slow:textual", "value": True, "delay_s": 2})
    interventions = [fires("fast", claim="quick"), fires("slow", claim="slow"), fires("later", claim="x")]

    result = await evaluate_step(judge, interventions, make_context(), deadline_s=0.2)

    assert [d.kind for d in result.directives] == ["fast"]
    assert result.timed_out == (("michael", "slow"), ("michael", "later"))
    assert result.judge_calls == 1 and judge.log.count() == 2  # "later" was never asked


async def test_interventions_run_in_declaration_order_once(make_judge: MakeJudge, make_context: MakeContext) -> None:
    judge = make_judge()
    interventions = [fires("b", claim="1"), fires("a", "jim", claim="2"), fires("c", "pam", claim="3")]

    result = await evaluate_step(judge, interventions, make_context(("michael", "jim")), deadline_s=5)

    assert [(d.kind, d.agent_id) for d in result.directives] == [("b", "michael"), ("a", "jim")]
    assert [r.claims[0].text for r in judge.log.calls] == ["1", "2"]  # pam does not act: skipped


async def test_judge_failures_are_reported_and_do_not_stop_the_pass(make_context: MakeContext) -> None:
    class Broken:
        name = "broken"

        async def evaluate(self, request: JudgeRequest) -> JudgeResult:
            raise JudgeOutputError("unparseable answer")

    interventions = [fires("judged", claim="c"), fires("unconditional")]

    result = await evaluate_step(Broken(), interventions, make_context(), deadline_s=5)

    assert result.errors == (("michael", "judged", "unparseable answer"),)
    assert [d.kind for d in result.directives] == ["unconditional"]


async def test_identical_requests_in_a_pass_share_one_judge_call(
    make_judge: MakeJudge, make_context: MakeContext
) -> None:
    judge = make_judge({"proposition": DISTINCT_VOICES.id, "value": 2})
    configs = {a: AgentConfig(anti_convergence_enabled=True) for a in ("michael", "jim", "dwight")}
    context = make_context(("michael", "jim", "dwight"), messages={"pam": 5}, configs=configs)

    result = await evaluate_step(judge, builtin_interventions(context.agent_ids, configs), context, 5)

    assert judge.log.count() == 1 and result.judge_calls == 1
    assert sorted(d.agent_id for d in result.directives) == ["dwight", "jim", "michael"]
    assert [o.judge_calls for o in result.outcomes] == [1, 0, 0]


async def test_shared_judge_retries_a_failed_request(make_judge: MakeJudge, make_context: MakeContext) -> None:
    calls: list[int] = []

    class Flaky:
        name = "flaky"

        async def evaluate(self, request: JudgeRequest) -> JudgeResult:
            calls.append(1)
            if len(calls) == 1:
                raise JudgeOutputError("first try fails")
            return await make_judge().evaluate(request)

    shared = SharedJudge(Flaky())
    intervention = fires("x", claim="c")

    first = await evaluate_step(shared, [intervention], make_context(), 5)
    second = await intervention.evaluate(shared, make_context())

    assert first.errors and second.fired and len(calls) == 2


MICHAEL_CONFIG = AgentConfig(
    repetition_suppression_enabled=True,
    repetition_threshold=0.05,
    variety_intervention_enabled=True,
    variety_message_threshold=7,
)
CATCHPHRASE = ["That's what she said.", "Budget first, that's what she said!", "Okay that's what she said"]


async def test_directives_for_step_runs_repetition_then_builtins_then_custom(
    make_judge: MakeJudge, make_events: MakeEvents
) -> None:
    judge = make_judge({"proposition": "variety:textual", "value": True})
    histories: dict[str, list[Event]] = {
        "michael": make_events("michael", ["fine", "one more", "and another", "done", *CATCHPHRASE]),
        "jim": make_events("jim", ["a", "b"]),
    }
    # jim has variety on but only 2 messages: no variety call for him
    configs = {"michael": MICHAEL_CONFIG, "jim": AgentConfig(variety_intervention_enabled=True)}
    prank = Intervention("jim", name="prank").set_functional_precondition(min_messages(2))
    custom = [prank.set_effect("prank Dwight"), Intervention("dwight", name="not-acting").set_effect("never")]
    trajectory = [e for events in histories.values() for e in events]
    personas = {a: persona(a) for a in NAMES}
    step = StepRecord("run-7", "sales", 12, ("michael", "jim"))

    result = await directives_for_step(judge, step, configs, histories, trajectory, personas, custom, 5.0)

    assert [(d.kind, d.agent_id) for d in result.directives] == [
        ("repetition", "michael"),
        ("variety", "michael"),
        ("prank", "jim"),
    ]
    assert "that's what she said" in result.directives[0].text
    assert judge.log.count(JudgeMode.CHECK) == 1 and result.judge_calls == 1
    assert result.timed_out == () and result.for_agent("jim")[0].text == "prank Dwight"


async def test_directives_for_step_defaults_to_no_corrections(make_judge: MakeJudge, make_events: MakeEvents) -> None:
    judge = make_judge(default=0)
    history = make_events("pam", ["same words here"] * 5)

    result = await directives_for_step(
        judge, StepRecord("r", "sales", 1, ("pam",)), {}, {"pam": history}, history, {}, [], 1.0
    )

    assert result.directives == () and judge.log.count() == 0
