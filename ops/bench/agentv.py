"""Benchmark of the AgentV runner: its own cost per case, and how close bounded concurrency gets to ideal.

Run from the repository root: ``.venv/bin/python -m ops.bench.agentv``. Merges into ``ops/bench/results.json``:

* ``agentv_overhead_ms_per_case``: 2,000 cases answered by an instant target and scored by an instant judge
  (an ``llm_judge``, a three-rubric ``rubric``, an ``in_order`` trajectory and a ``contains``), plus the JSONL
  record and the summary — wall time ÷ cases, best of 5 rounds: everything the runner does around the target
  and the judge (target ≤ 5 ms);
* ``agentv_200_cases_s`` / ``agentv_ideal_s`` / ``agentv_vs_ideal``: 200 cases whose target answers after
  200 ms and whose judge answers after 200 ms, at ``--workers 20``; ideal = ⌈200 ÷ 20⌉ × (0.2 + 0.2) s
  (target ≤ 1.3 × ideal).
"""

from __future__ import annotations

import asyncio
import math
import time

import orjson

from engine.formats.agentv import records, summary
from engine.formats.agentv.model import EvalCase, EvaluatorSpec, ExpectedTool, Rubric
from engine.formats.agentv.runner import CaseOutcome, RunOptions, run_cases
from engine.formats.targets import TargetAnswer, TargetRequest, ToolCall
from engine.judges.base import ClaimAnswer, JudgeMode, JudgeRequest, JudgeResult
from ops.bench.common import RESULTS_PATH, merge_results

OVERHEAD_CASES = 2000
ROUNDS = 5
SLOW_CASES = 200
WORKERS = 20
LATENCY_S = 0.2

EVALUATORS = (
    EvaluatorSpec("judge", "llm_judge"),
    EvaluatorSpec("character", "rubric", rubrics=tuple(Rubric(f"r{i}", f"rubric {i}") for i in range(3))),
    EvaluatorSpec(
        "sequence",
        "tool_trajectory",
        config={"mode": "in_order"},
        expected=(ExpectedTool("check_calendar"), ExpectedTool("schedule_meeting", {"topic": "fire safety"})),
    ),
    EvaluatorSpec("says-when", "contains", config={"value": "3 pm"}),
)
CALLS = (ToolCall("check_calendar", {"day": "today"}), ToolCall("schedule_meeting", {"topic": "fire safety"}))


class Target:
    name = "bench"

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s

    async def answer(self, request: TargetRequest) -> TargetAnswer:
        if self.delay_s:
            await asyncio.sleep(self.delay_s)  # the simulated target latency under test
        return TargetAnswer(request.item_id, "Meeting booked for 3 pm. Attendance mandatory.", self.name, CALLS)


class Judge:
    name = "bench-judge"

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s

    async def evaluate(self, request: JudgeRequest) -> JudgeResult:
        if self.delay_s:
            await asyncio.sleep(self.delay_s)  # the simulated judge latency under test
        check = request.mode is JudgeMode.CHECK
        answers = tuple(ClaimAnswer(c.id, True if check else 8, "ok") for c in request.claims)
        return JudgeResult(answers, self.name)


def cases(n: int, evaluators: tuple[EvaluatorSpec, ...]) -> list[EvalCase]:
    return [
        EvalCase(
            f"case-{i}", "books the meeting", ({"role": "user", "content": f"stimulus {i}"},), evaluators=evaluators
        )
        for i in range(n)
    ]


def _finish(outcomes: list[CaseOutcome]) -> int:
    lines = [orjson.dumps(records.case_record(o, "bench", "bench-judge")) for o in outcomes]
    summary.summarise(outcomes)
    return len(lines)


async def overhead_ms() -> float:
    best = math.inf
    batch = cases(OVERHEAD_CASES, EVALUATORS)
    for _ in range(ROUNDS):
        started = time.perf_counter()
        outcomes = await run_cases(batch, Target(0), Judge(0), RunOptions(workers=WORKERS))
        _finish(outcomes)
        best = min(best, (time.perf_counter() - started) * 1000 / OVERHEAD_CASES)
    return best


async def concurrency_s() -> float:
    batch = cases(SLOW_CASES, (EvaluatorSpec("judge", "llm_judge"),))
    started = time.perf_counter()
    outcomes = await run_cases(batch, Target(LATENCY_S), Judge(LATENCY_S), RunOptions(workers=WORKERS))
    elapsed = time.perf_counter() - started
    assert all(o.error is None for o in outcomes)
    return elapsed


def main() -> None:
    overhead = asyncio.run(overhead_ms())
    wall = asyncio.run(concurrency_s())
    ideal = math.ceil(SLOW_CASES / WORKERS) * 2 * LATENCY_S
    results = {
        "agentv_overhead_ms_per_case": overhead,
        "agentv_200_cases_s": wall,
        "agentv_ideal_s": ideal,
        "agentv_vs_ideal": wall / ideal,
    }
    merge_results(RESULTS_PATH, results)
    print(f"runner overhead per case: {overhead:.3f} ms (target ≤ 5)")
    print(
        f"200 cases, 200 ms target + 200 ms judge, 20 workers: {wall:.3f} s; ideal {ideal:.1f} s; "
        f"ratio {wall / ideal:.3f} (target ≤ 1.3)"
    )


if __name__ == "__main__":
    main()
