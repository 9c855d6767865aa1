"""One in-flight budget of judge calls (engine.judges.budget): the cap, the shares, lending, one deadline per call.

Calls are held by events and counted, so the assertions are about order and counts, not about timing."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from engine.errors import ConfigurationError
from engine.judges.base import Claim, JudgeMode, JudgeRequest, JudgeResult
from engine.judges.budget import EVAL_LANE, GATE_LANE, JudgeBudget, eval_slots
from engine.judges.llm import CallPolicy, LlmJudge, Reply, Turn
from engine.models import TokenUsage
from engine.prompts import Prompt
from engine.settings import Settings


def request(n: int = 0) -> JudgeRequest:
    return JudgeRequest(JudgeMode.SCORE, (Claim(f"c{n}", "the agent stays in character"),), target_name="jim")


@dataclass
class HeldJudge:
    """Every call waits until the test lets it go; counts what runs at once, overall and per caller."""

    running: dict[str, int] = field(default_factory=lambda: {GATE_LANE: 0, EVAL_LANE: 0})
    peak_total: int = 0
    started: list[str] = field(default_factory=list)
    gates: list[asyncio.Event] = field(default_factory=list)
    changed: asyncio.Condition = field(default_factory=asyncio.Condition)

    @property
    def name(self) -> str:
        return "held"

    async def call(self, caller: str) -> JudgeResult:
        gate = asyncio.Event()
        self.running[caller] += 1
        self.peak_total = max(self.peak_total, sum(self.running.values()))
        self.started.append(caller)
        self.gates.append(gate)
        async with self.changed:
            self.changed.notify_all()
        try:
            await gate.wait()
        finally:
            self.running[caller] -= 1
        return JudgeResult(answers=(), judge=self.name)

    async def started_count(self, n: int) -> None:
        async with self.changed:
            await asyncio.wait_for(self.changed.wait_for(lambda: len(self.started) >= n), 5)

    def finish(self, index: int) -> None:
        self.gates[index].set()


@dataclass
class Caller:
    """A lane's judge as the budget hands it out, telling the held judge who called."""

    held: HeldJudge
    caller: str

    @property
    def name(self) -> str:
        return "held"

    async def evaluate(self, request: JudgeRequest) -> JudgeResult:
        return await self.held.call(self.caller)


def lanes(budget: JudgeBudget, held: HeldJudge) -> dict[str, object]:
    return {lane: budget.judge(Caller(held, lane), lane, None) for lane in (GATE_LANE, EVAL_LANE)}


async def settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


async def calls(judges: dict[str, object], order: Sequence[str]) -> list[asyncio.Task[JudgeResult]]:
    tasks = [asyncio.ensure_future(judges[lane].evaluate(request(n))) for n, lane in enumerate(order)]  # type: ignore[attr-defined]
    await settle()
    return tasks


def test_the_evaluations_share_is_at_least_one_slot_and_leaves_the_gate_one() -> None:
    assert [eval_slots(64, 0.125), eval_slots(4, 0.01), eval_slots(2, 0.99), eval_slots(10, 0.5)] == [8, 1, 1, 5]
    with pytest.raises(ConfigurationError, match=r"^DRIFT_JUDGE_CONCURRENCY: must be greater than or equal to 2"):
        Settings(judge_concurrency=1)  # the settings bound it, once: the budget never sees 1
    for bad in (0.0, 1.0, -0.1, 1.5, float("nan")):
        with pytest.raises(ConfigurationError, match=r"^DRIFT_EVAL_JUDGE_SHARE: must be (greater|less) than"):
            Settings(eval_judge_share=bad)


async def test_concurrent_calls_never_exceed_the_budget() -> None:
    budget, held = JudgeBudget(6, 0.34), HeldJudge()  # evaluations: 2 slots, the gate: 4 reserved, 6 at most
    judges = lanes(budget, held)
    order = list(itertools.islice(itertools.cycle([GATE_LANE, EVAL_LANE, EVAL_LANE]), 30))
    tasks = await calls(judges, order)
    finished = 0
    while finished < len(tasks):
        await held.started_count(finished + 1)
        assert sum(held.running.values()) <= 6 and held.running[EVAL_LANE] <= 2
        assert budget.in_flight == sum(held.running.values())
        held.finish(finished)
        finished += 1
        await settle()
    await asyncio.gather(*tasks)
    assert held.peak_total == 6 and budget.lanes[EVAL_LANE].peak == 2 and budget.in_flight == 0


async def test_evaluations_never_take_more_than_their_share_even_when_the_gate_is_idle() -> None:
    budget, held = JudgeBudget(8, 0.25), HeldJudge()
    tasks = await calls(lanes(budget, held), [EVAL_LANE] * 10)
    assert held.running == {GATE_LANE: 0, EVAL_LANE: 2}  # six slots idle, yet no third evaluation call
    for n in range(10):
        await held.started_count(n + 1)
        held.finish(n)
    await asyncio.gather(*tasks)
    assert budget.lanes[EVAL_LANE].peak == 2


async def test_the_gate_gets_its_reservation_at_once_while_evaluations_are_saturated() -> None:
    budget, held = JudgeBudget(8, 0.25), HeldJudge()
    judges = lanes(budget, held)
    evaluations = await calls(judges, [EVAL_LANE] * 10)
    gate = await calls(judges, [GATE_LANE] * 10)
    assert held.running == {GATE_LANE: 6, EVAL_LANE: 2}  # the gate's six, however many evaluations wait
    for index in range(len(held.gates)):
        held.finish(index)
    for n in range(len(held.gates), 20):
        await held.started_count(n + 1)
        held.finish(n)
    await asyncio.gather(*evaluations, *gate)


async def test_the_gate_borrows_idle_evaluation_slots_and_gives_them_back_first() -> None:
    budget, held = JudgeBudget(4, 0.25), HeldJudge()  # evaluations: 1 slot, the gate: 3 reserved
    judges = lanes(budget, held)
    borrowed = await calls(judges, [GATE_LANE] * 4)
    assert held.running == {GATE_LANE: 4, EVAL_LANE: 0}  # work-conserving: the idle evaluation slot is lent
    waiting = await calls(judges, [GATE_LANE, EVAL_LANE])  # a gate call queued before the evaluation
    assert held.running == {GATE_LANE: 4, EVAL_LANE: 0}
    held.finish(0)
    await held.started_count(5)
    assert held.started[4] == EVAL_LANE  # the freed slot goes back to its owner, not to the gate call ahead
    held.finish(1)
    await held.started_count(6)
    assert held.started[5] == GATE_LANE
    for index in range(2, 6):
        held.finish(index)
    await asyncio.gather(*borrowed, *waiting)
    assert budget.in_flight == 0


async def test_a_call_cancelled_while_it_waits_gives_up_its_place_without_leaking_a_slot() -> None:
    budget, held = JudgeBudget(2, 0.5), HeldJudge()
    judges = lanes(budget, held)
    first = await calls(judges, [EVAL_LANE])
    queued = await calls(judges, [EVAL_LANE, EVAL_LANE])
    queued[0].cancel()
    await settle()
    held.finish(0)
    await held.started_count(2)
    assert budget.lanes[EVAL_LANE].in_flight == 1 and budget.in_flight == 1
    held.finish(1)
    await asyncio.gather(*first, queued[1])
    assert queued[0].cancelled() and budget.in_flight == 0


class InstantLlm(LlmJudge):
    """An LLM judge whose model answers at once (the budget, not the model, holds the call)."""

    async def _send(self, prompt: Prompt, followups: Sequence[Turn]) -> Reply:
        return Reply('{"reasoning": "in character", "value": 7}', TokenUsage(input_tokens=10))

    async def aclose(self) -> None:
        return None


async def test_a_call_queued_for_a_slot_does_not_burn_its_deadline() -> None:
    deadline_s = 0.2
    budget, held = JudgeBudget(2, 0.5), HeldJudge()
    llm = budget.judge(InstantLlm("instant", CallPolicy(deadline_s=None, concurrency=None)), EVAL_LANE, deadline_s)
    holder = await calls(lanes(budget, held), [EVAL_LANE])  # holds the evaluations' only slot
    queued = asyncio.ensure_future(llm.evaluate(request()))
    await asyncio.sleep(deadline_s * 1.5)  # the queued call waits longer than its deadline
    assert not queued.done()
    held.finish(0)
    result = await asyncio.wait_for(queued, 5)  # its deadline started with its slot: it answers
    assert result.answers[0].value == 7
    await asyncio.gather(*holder)


class FirstCallHangs(InstantLlm):
    """The model never answers the first call; every later one at once."""

    hung = False

    async def _send(self, prompt: Prompt, followups: Sequence[Turn]) -> Reply:
        if not self.hung:
            self.hung = True
            await asyncio.Event().wait()
        return await super()._send(prompt, followups)


async def test_an_llm_judge_with_its_own_cap_starts_the_deadline_once_the_call_holds_a_slot() -> None:
    from engine.errors import JudgeTimeout

    judge = FirstCallHangs("hangs", CallPolicy(deadline_s=0.2, concurrency=1))  # outside a worker: its own cap
    first = asyncio.ensure_future(judge.evaluate(request()))
    await settle()
    second = asyncio.ensure_future(judge.evaluate(request()))  # queued behind the first for its whole deadline
    with pytest.raises(JudgeTimeout):
        await first
    assert (await asyncio.wait_for(second, 5)).answers[0].value == 7


async def test_a_call_past_its_deadline_times_out_once_and_frees_its_slot() -> None:
    from engine.errors import JudgeTimeout

    budget, held = JudgeBudget(2, 0.5), HeldJudge()
    slow = budget.judge(Caller(held, EVAL_LANE), EVAL_LANE, 0.1)
    with pytest.raises(JudgeTimeout, match=r"no answer within 0\.1 s"):
        await slow.evaluate(request())  # the held judge never answers on its own
    assert budget.in_flight == 0 and held.running[EVAL_LANE] == 0
