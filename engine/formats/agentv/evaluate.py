"""Score one answer with a case's evaluators (LLM judge and rubrics through the judge layer).

``llm_judge`` asks the judge for a 0–9 score of "the answer meets the expected outcome" (and the evaluator's
own prompt file, when it names one) and reports it as score ÷ 9; ``rubric`` asks the judge to check each
rubric (true/false) and scores satisfied weight ÷ total weight, failing outright when a required rubric is
unmet. Claim ids are ``CASE/EVALUATOR`` and ``CASE/EVALUATOR/RUBRIC``, so a scripted judge can target them.
A case without evaluators is judged by one default ``llm_judge``. A case's evaluators run concurrently (judge
calls and code judges overlap); an evaluator that raises counts 0 at its weight, with the error.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from engine.formats.agentv import scoring
from engine.formats.agentv.assertions import string_assertion
from engine.formats.agentv.codejudge import CODE_AGGREGATORS, Observed, run_code_judge
from engine.formats.agentv.model import STRING_ASSERTIONS, EvalCase, EvaluatorSpec
from engine.formats.agentv.scoring import EvaluatorResult, failed, result
from engine.formats.usercode import STRICT, CodeSandbox
from engine.judges.base import Claim, Judge, JudgeMode, JudgeRequest

DEFAULT_EVALUATOR = EvaluatorSpec("llm_judge", "llm_judge")
_SCALE = 9.0


async def evaluate_case(
    case: EvalCase, observed: Observed, judge: Judge | None, *, sandbox: CodeSandbox = STRICT
) -> tuple[EvaluatorResult, ...]:
    """Every evaluator of ``case``; code judges run under ``sandbox`` (the run's user-code policy)."""
    specs = case.evaluators or (DEFAULT_EVALUATOR,)
    return tuple(await asyncio.gather(*(evaluate(spec, case, observed, judge, sandbox) for spec in specs)))


async def evaluate(
    spec: EvaluatorSpec, case: EvalCase, observed: Observed, judge: Judge | None, sandbox: CodeSandbox = STRICT
) -> EvaluatorResult:
    try:
        found = await _dispatch(spec, case, observed, judge, sandbox)
        return scoring.negated(found) if spec.negate else found
    except Exception as exc:
        return failed(spec, f"evaluator crashed: {type(exc).__name__}: {exc}")


def _deterministic(spec: EvaluatorSpec, case: EvalCase, observed: Observed) -> EvaluatorResult | None:
    """The evaluators that need neither a judge nor a subprocess; None for the others."""
    answer, usage = observed.answer, observed.answer.usage
    scorers: dict[str, Callable[[], EvaluatorResult]] = {
        "tool_trajectory": lambda: scoring.tool_trajectory(spec, answer.tool_calls, answered=case.dialect == "4.x"),
        "field_accuracy": lambda: scoring.field_accuracy(spec, answer.text, case.reference_value),
        "latency": lambda: scoring.threshold_check(spec, "duration ms", observed.duration_ms, "threshold"),
        "cost": lambda: scoring.threshold_check(spec, "cost USD", observed.cost_usd, "budget"),
        "token_usage": lambda: scoring.token_usage(
            spec,
            usage.input_tokens,
            usage.output_tokens,
            usage.cache_read_input_tokens,
            usage.input_tokens + usage.output_tokens + usage.cache_read_input_tokens > 0,
        ),
    }
    scorer = scorers.get(spec.type)
    if scorer is None and spec.type in STRING_ASSERTIONS:
        return string_assertion(spec, answer.text)
    return scorer() if scorer is not None else None


async def _dispatch(
    spec: EvaluatorSpec, case: EvalCase, observed: Observed, judge: Judge | None, sandbox: CodeSandbox
) -> EvaluatorResult:
    found = _deterministic(spec, case, observed)
    if found is not None:
        return found
    if spec.type == "code_judge":
        return await run_code_judge(case, spec, observed, sandbox)
    if spec.type == "composite":
        return await _composite(spec, case, observed, judge, sandbox)
    if judge is None:
        return failed(spec, f"{spec.type} needs a judge (--judge)")
    if spec.type == "rubric":
        return await rubric(spec, case, observed, judge)
    return await llm_judge(spec, case, observed, judge)


def _prompt_text(spec: EvaluatorSpec, case: EvalCase) -> str:
    prompt = spec.config.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        return ""
    path = case.source.parent / prompt
    if "\n" not in prompt and path.suffix in {".md", ".txt"}:
        return path.read_text(encoding="utf-8") if path.is_file() else ""
    return prompt


def _supplementary(case: EvalCase, extra: str = "") -> str:
    parts = [f"Question:\n{case.question}", f"Expected outcome:\n{case.expected_outcome}"]
    if case.reference_answer:
        parts.append(f"Reference answer:\n{case.reference_answer}")
    if extra:
        parts.append(f"Evaluation instructions:\n{extra}")
    return "\n\n".join(parts)


async def llm_judge(
    spec: EvaluatorSpec, case: EvalCase, observed: Observed, judge: Judge, *, extra: str | None = None
) -> EvaluatorResult:
    claim = Claim(f"{case.id}/{spec.name}", f"The answer meets the expected outcome: {case.expected_outcome.strip()}")
    request = JudgeRequest(
        mode=JudgeMode.SCORE,
        claims=(claim,),
        target_name=case.id,
        action=observed.answer.text,
        supplementary=_supplementary(case, _prompt_text(spec, case) if extra is None else extra),
    )
    answer = (await judge.evaluate(request)).answer_for(claim.id)
    score = float(answer.value) / _SCALE
    line = f"{claim.text} ({answer.value}/9)"
    hits, misses = ([line], []) if score >= scoring.PASS_AT else ([], [line])
    return result(spec, score, hits, misses, reasoning=answer.reasoning)


async def rubric(spec: EvaluatorSpec, case: EvalCase, observed: Observed, judge: Judge) -> EvaluatorResult:
    claims = tuple(Claim(f"{case.id}/{spec.name}/{r.id}", r.description) for r in spec.rubrics)
    request = JudgeRequest(
        mode=JudgeMode.CHECK,
        claims=claims,
        target_name=case.id,
        action=observed.answer.text,
        supplementary=_supplementary(case),
    )
    judged = await judge.evaluate(request)
    hits, misses, reasons = [], [], []
    satisfied = total = 0.0
    required_unmet = False
    for item, claim in zip(spec.rubrics, claims, strict=True):
        answer = judged.answer_for(claim.id)
        line = f"[{item.id}] {item.description}" + (f": {answer.reasoning}" if answer.reasoning else "")
        total += item.weight
        if answer.value is True:
            satisfied += item.weight
            hits.append(line)
        else:
            misses.append(line)
            required_unmet = required_unmet or item.required
        reasons.append(f"{item.id}: {'satisfied' if answer.value is True else 'not satisfied'}")
    score = satisfied / total if total else 0.0
    verdict = "fail" if required_unmet else None
    return result(spec, score, hits, misses, reasoning="; ".join(reasons), verdict=verdict)


async def _composite(
    spec: EvaluatorSpec, case: EvalCase, observed: Observed, judge: Judge | None, sandbox: CodeSandbox
) -> EvaluatorResult:
    jobs = (evaluate(child, case, observed, judge, sandbox) for child in spec.children)
    children = tuple(await asyncio.gather(*jobs))
    aggregator = spec.config.get("aggregator") or {}
    kind = aggregator.get("type", "weighted_average") if isinstance(aggregator, dict) else "weighted_average"
    if kind == "weighted_average":
        weights = aggregator.get("weights") or {} if isinstance(aggregator, dict) else {}
        reweighted = [EvaluatorResult(c.name, c.type, c.score, float(weights.get(c.name, c.weight))) for c in children]
        score = scoring.weighted_mean(reweighted)
        hits = [h for c in children for h in c.hits]
        misses = [m for c in children for m in c.misses]
        return _with_children(result(spec, score, hits, misses, reasoning=_summary(children)), children)
    if kind in CODE_AGGREGATORS:
        aggregate = await _code_aggregate(spec, aggregator, case, observed, children, sandbox)
        return _with_children(aggregate, children)
    if kind in {"llm_judge", "llm-judge", "llm-grader"} and judge is not None:
        return _with_children(await _judge_aggregate(spec, aggregator, case, observed, children, judge), children)
    return failed(spec, f"composite aggregator {kind!r} is not supported (weighted_average, code_judge, llm_judge)")


async def _judge_aggregate(
    spec: EvaluatorSpec,
    aggregator: dict[str, object],
    case: EvalCase,
    observed: Observed,
    children: Sequence[EvaluatorResult],
    judge: Judge,
) -> EvaluatorResult:
    """The judge scores the answer 0–9 given the children's scores and reasoning (and the aggregator's prompt)."""
    from dataclasses import replace

    verdicts = "\n".join(f"- {c.name}: {c.score:.2f} ({c.verdict}) {c.reasoning}".rstrip() for c in children)
    prompt_spec = replace(spec, config={"prompt": aggregator.get("prompt")})
    extra = "\n\n".join(p for p in (_prompt_text(prompt_spec, case), f"Evaluator results:\n{verdicts}") if p)
    return await llm_judge(spec, case, observed, judge, extra=extra)


async def _code_aggregate(
    spec: EvaluatorSpec,
    aggregator: dict[str, object],
    case: EvalCase,
    observed: Observed,
    children: Sequence[EvaluatorResult],
    sandbox: CodeSandbox,
) -> EvaluatorResult:
    from dataclasses import replace

    from engine.formats.agentv.evalparse import parse_argv_value

    argv = parse_argv_value(aggregator)
    if not argv:
        return failed(spec, "composite code_judge aggregator needs 'path' (or 'script')")
    results = {
        c.name: {"score": c.score, "hits": list(c.hits), "misses": list(c.misses), "reasoning": c.reasoning}
        for c in children
    }
    child = replace(spec, argv=argv, config={**spec.config, "results": results})
    return await run_code_judge(case, child, observed, sandbox)


def _summary(children: Sequence[EvaluatorResult]) -> str:
    return "; ".join(f"{c.name}: {c.score:.2f}" for c in children)


def _with_children(parent: EvaluatorResult, children: tuple[EvaluatorResult, ...]) -> EvaluatorResult:
    from dataclasses import replace

    return replace(parent, children=children)
