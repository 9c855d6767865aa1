"""Result records: upstream AgentV's JSONL field names, the 4.x ``index.jsonl`` shape, and the FormatRun.

Our JSONL record per case uses the names the upstream result files use (``timestamp``, ``eval_id``,
``dataset``, ``score``, ``hits``, ``misses``, ``candidate_answer``, ``target``, ``reasoning``,
``evaluator_results`` of ``{name, type, score, weight, verdict, hits, misses, reasoning}``,
``trace_summary``, ``error``) plus ``verdict`` and ``judge``. The 4.x index record is ``{test_id, score,
scores: [{name, type, score, weight, verdict}], execution_status}``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine.formats.agentv.runner import CaseOutcome
from engine.formats.agentv.scoring import EvaluatorResult
from engine.formats.results import FormatRun, ItemResult, ItemScore

#: our canonical evaluator types as 4.x spells them
TYPES_4X = {
    "llm_judge": "llm-grader",
    "rubric": "llm-grader",  # 4.x reports rubric graders as llm-grader
    "tool_trajectory": "tool-trajectory",
    "code_judge": "code-grader",
    "field_accuracy": "field-accuracy",
    "token_usage": "token-usage",
    **{t: t.replace("_", "-") for t in ("contains_any", "contains_all", "icontains_any", "icontains_all")},
    **{t: t.replace("_", "-") for t in ("starts_with", "ends_with", "is_json")},
}


def evaluator_record(result: EvaluatorResult) -> dict[str, Any]:
    record: dict[str, Any] = {
        "name": result.name,
        "type": result.type,
        "score": result.score,
        "weight": result.weight,
        "verdict": result.verdict,
        "hits": list(result.hits),
        "misses": list(result.misses),
    }
    if result.reasoning:
        record["reasoning"] = result.reasoning
    if result.error:
        record["error"] = result.error
    if result.children:
        record["evaluator_results"] = [evaluator_record(c) for c in result.children]
    return record


def _trace_summary(outcome: CaseOutcome) -> dict[str, Any]:
    calls = outcome.answer.tool_calls if outcome.answer else ()
    by_name: dict[str, int] = {}
    for call in calls:
        by_name[call.tool] = by_name.get(call.tool, 0) + 1
    return {"event_count": len(calls), "tool_names": sorted(by_name), "tool_calls_by_name": by_name, "error_count": 0}


def case_record(outcome: CaseOutcome, target: str, judge: str) -> dict[str, Any]:
    results = outcome.results
    record: dict[str, Any] = {
        "timestamp": outcome.timestamp.isoformat().replace("+00:00", "Z"),
        "eval_id": outcome.case.id,
        "dataset": outcome.case.dataset,
        "score": outcome.score,
        "verdict": outcome.verdict,
        "hits": [h for r in results for h in r.hits],
        "misses": [m for r in results for m in r.misses],
        "candidate_answer": outcome.answer.text if outcome.answer else "",
        "target": target,
        "judge": judge,
        "reasoning": " | ".join(f"{r.name}: {r.reasoning}" for r in results if r.reasoning),
        "lm_provider_request": {"question": outcome.case.question},
        "evaluator_results": [evaluator_record(r) for r in results],
        "trace_summary": _trace_summary(outcome),
        "duration_ms": round(outcome.duration_ms, 3),
    }
    if outcome.case.conversation_id:
        record["conversation_id"] = outcome.case.conversation_id
    if outcome.error:
        record["error"] = outcome.error
    return record


def index_record(outcome: CaseOutcome) -> dict[str, Any]:
    """The record ``agentv`` 4.x writes to ``index.jsonl`` for one test."""
    scores = [
        {
            "name": r.name,
            "type": TYPES_4X.get(r.type, r.type),
            "score": r.score,
            "weight": r.weight,
            "verdict": r.verdict,
        }
        for r in outcome.results
    ]
    status = "execution_error" if outcome.error else ("ok" if outcome.verdict == "pass" else "quality_failure")
    record: dict[str, Any] = {
        "test_id": outcome.case.id,
        "dataset": outcome.case.dataset,
        "score": outcome.score,
        "scores": scores,
        "execution_status": status,
    }
    if outcome.error:
        record["error"] = outcome.error
    return record


def item_result(outcome: CaseOutcome) -> ItemResult:
    scores = tuple(
        ItemScore(
            name=r.name,
            type=r.type,
            score=r.score,
            verdict=r.verdict,
            weight=r.weight,
            passed=r.verdict == "pass",
            error=r.error,
            details={"hits": list(r.hits), "misses": list(r.misses), "reasoning": r.reasoning},
        )
        for r in outcome.results
    )
    usage = outcome.answer.usage if outcome.answer else None
    return ItemResult(
        item_id=outcome.case.id,
        scores=scores,
        score=outcome.score,
        verdict=outcome.verdict,
        answer=outcome.answer.text if outcome.answer else None,
        error=outcome.error,
        input_tokens=usage.input_tokens if usage else 0,
        output_tokens=usage.output_tokens if usage else 0,
        latency_ms=outcome.duration_ms,
        details={"dataset": outcome.case.dataset, "source": str(outcome.case.source)},
    )


def format_run(
    source: str, target: str, judge: str, outcomes: Sequence[CaseOutcome], summary: dict[str, Any]
) -> FormatRun:
    errors = sum(1 for o in outcomes if o.error)
    status = "failed" if outcomes and errors == len(outcomes) else ("partial" if errors else "completed")
    return FormatRun(
        format="agentv",
        source=source,
        target=target,
        judge=judge,
        status=status,
        started_at=min((o.timestamp for o in outcomes), default=None) or _now(),
        finished_at=_now(),
        items=tuple(item_result(o) for o in outcomes),
        summary=summary,
    )


def _now() -> Any:
    from datetime import UTC, datetime

    return datetime.now(UTC)
