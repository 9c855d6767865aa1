"""Run eval cases against a target with bounded concurrency and a per-case timeout.

Each case: the target answers (its prompt is the last user message; the whole conversation and the case id go
along), then every evaluator scores the answer; the case score is the weighted mean and its verdict follows
the score. A target that fails or a case that runs out of time is recorded with its error and score 0; the
other cases go on.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from engine.formats.agentv.codejudge import Observed
from engine.formats.agentv.evaluate import DEFAULT_EVALUATOR, evaluate_case
from engine.formats.agentv.model import EvalCase
from engine.formats.agentv.scoring import EvaluatorResult, case_score, verdict_of
from engine.formats.targets import Target, TargetAnswer, TargetRequest
from engine.formats.usercode import STRICT, CodeSandbox
from engine.judges.base import Judge


@dataclass(frozen=True, slots=True)
class RunOptions:
    workers: int = 4
    case_timeout_s: float = 300.0
    #: how code judges run (the sandbox, or unsandboxed by the operator's choice where it cannot be had)
    sandbox: CodeSandbox = STRICT


@dataclass(frozen=True, slots=True)
class CaseOutcome:
    case: EvalCase
    answer: TargetAnswer | None
    results: tuple[EvaluatorResult, ...]
    score: float
    verdict: str
    error: str | None
    duration_ms: float
    timestamp: datetime


def request_for(case: EvalCase) -> TargetRequest:
    payload = {"eval_id": case.id, "expected_outcome": case.expected_outcome, "dataset": case.dataset}
    return TargetRequest(case.id, case.question, case.input_messages, payload)


async def run_case(case: EvalCase, target: Target, judge: Judge | None, sandbox: CodeSandbox = STRICT) -> CaseOutcome:
    started = time.perf_counter()
    stamp = datetime.now(UTC)
    try:
        answer = await target.answer(request_for(case))
    except Exception as exc:
        return _errored(case, f"target {target.name}: {exc}", started, stamp)
    duration = answer.latency_ms or (time.perf_counter() - started) * 1000
    results = await evaluate_case(case, Observed(answer, duration, answer.cost_usd), judge, sandbox=sandbox)
    specs = case.evaluators or (DEFAULT_EVALUATOR,)
    score = case_score(results, [s.required_min for s in specs])
    elapsed = (time.perf_counter() - started) * 1000
    return CaseOutcome(case, answer, results, score, verdict_of(score), None, elapsed, stamp)


def _errored(case: EvalCase, error: str, started: float, stamp: datetime) -> CaseOutcome:
    return CaseOutcome(case, None, (), 0.0, "fail", error, (time.perf_counter() - started) * 1000, stamp)


async def run_cases(
    cases: Sequence[EvalCase], target: Target, judge: Judge | None, options: RunOptions = RunOptions()
) -> list[CaseOutcome]:
    """Outcomes in the order of ``cases``; at most ``options.workers`` cases run at once."""
    gate = asyncio.Semaphore(max(1, options.workers))

    async def one(case: EvalCase) -> CaseOutcome:
        async with gate:
            started, stamp = time.perf_counter(), datetime.now(UTC)
            try:
                job = run_case(case, target, judge, options.sandbox)
                async with asyncio.timeout(options.case_timeout_s):
                    return await job
            except TimeoutError:
                return _errored(case, f"case timed out after {options.case_timeout_s:g}s", started, stamp)

    return list(await asyncio.gather(*(one(case) for case in cases)))
