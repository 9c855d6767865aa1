"""The gate's output records, built from one attempt's result: the ``verdicts`` record, the ``correction-logs``
record derived from it, and the ``messages`` record of a commit (plain dicts: the hot path skips pydantic; tests
check each validates against its model). The shadow lane builds its candidate's records with the same functions.
"""

from __future__ import annotations

from typing import Any

from engine.gate import AttemptResult, DimensionCheck, GateDecision
from streams.wire.payloads import Draft


def _score_out(check: DimensionCheck) -> dict[str, Any]:
    return {"score": check.score, "threshold": check.threshold, "passed": check.passed,
            "timed_out": check.timed_out, "error": check.error, "reasoning": check.reasoning}  # fmt: skip


def build_verdict(
    draft: Draft, result: AttemptResult, decision: GateDecision, latency_ms: float, judge: str, unknown: int = 0
) -> dict[str, Any]:
    """The ``verdicts`` record as a plain dict (shape of :class:`streams.wire.payloads.Verdict`; built without
    pydantic because this is the hot path — a test checks it validates against the model)."""
    similarity = result.similarity
    return {
        "draft_id": draft.draft_id,
        "attempt": draft.attempt,
        "agent_id": draft.agent_id,
        "run_id": draft.run_id,
        "decision": decision.decision.value,
        "outcome": decision.outcome.value,
        "text": decision.text,
        "committed_attempt": decision.committed_attempt,
        "scores": {c.dimension.value: _score_out(c) for c in result.checks},
        "similarity": None
        if similarity is None
        else {"score": similarity.score, "threshold": similarity.threshold, "passed": similarity.passed,
              "most_similar": similarity.most_similar},
        "feedback": decision.feedback,
        "latency_ms": latency_ms,
        "token_usage": result.usage.as_dict(),
        "judge": judge if result.checks else None,
        "unknown_earlier_attempts": unknown,
    }  # fmt: skip


def build_log(draft: Draft, verdict: dict[str, Any], now: str) -> dict[str, Any]:
    """The ``correction-logs`` record (shape of :class:`streams.wire.payloads.CorrectionLog`), derived from the verdict
    alone, so a re-emitted attempt's log is rebuilt exactly from its verdict record."""
    committed = verdict["decision"] == "commit"
    scores = verdict["scores"]
    similarity = verdict["similarity"]
    return {
        "draft_id": draft.draft_id,
        "attempt_number": draft.attempt,
        "agent_id": draft.agent_id,
        "run_id": draft.run_id,
        "original_text": draft.text,
        "corrected_text": verdict["text"] if committed and verdict["text"] != draft.text else None,
        "dimension_scores": {
            name: {"score": s["score"], "reasoning": s["reasoning"], "timed_out": s["timed_out"], "error": s["error"]}
            for name, s in scores.items()
        },
        "similarity_score": similarity["score"] if similarity else None,
        "total_score": sum(s["score"] for s in scores.values()),
        "decision": verdict["decision"],
        "outcome": verdict["outcome"],
        "token_usage": verdict["token_usage"],
        "latency_ms": verdict["latency_ms"],
        "created_at": now,
    }


def committed_message(draft: Draft, text: str, now: str) -> dict[str, Any]:
    """The ``messages`` record of a commit (shape of :class:`streams.wire.payloads.Message`)."""
    return {
        "message_id": draft.draft_id,
        "agent_id": draft.agent_id,
        "agent_name": draft.agent_name,
        "text": text,
        "kind": "action",
        "source": None,
        "run_id": draft.run_id,
        "channel": draft.channel,
        "recipient": draft.recipient,
        "origin": "gate",
        "ts": now,
    }
