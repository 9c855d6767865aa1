"""Offline evaluation: per-dimension scorers, evaluation runs, golden baselines and regression reports.

Service use (the lead's Postgres store and Kafka scheduling)::

    from engine.evaluation import run_evaluation, EvaluationStore, ScoreRow

    run = await run_evaluation(judge, store, "dwight", events, EVALUATION_DIMENSIONS, propositions_dir)

Harness use (``drift eval``): :func:`evaluate_cast`, :func:`build_report`, the renderers in
:mod:`engine.evaluation.report` and the baseline files of :mod:`engine.evaluation.baseline`.
"""

from engine.evaluation.messages import (
    MessageFileError,
    MessageSource,
    ParsedMessages,
    StaticMessageSource,
    read_messages,
)
from engine.evaluation.run import (
    AgentEvaluation,
    EvaluationRun,
    EvaluationStore,
    RunStatus,
    ScoreRow,
    evaluate_agent,
    overall_score,
    run_evaluation,
    score_rows,
)
from engine.evaluation.scorers import (
    ChannelCache,
    ScoringOptions,
    score_adherence,
    score_consistency,
    score_convergence,
    score_fluency,
    score_for_agent,
    score_ideas_quantity,
)

__all__ = [
    "AgentEvaluation",
    "ChannelCache",
    "EvaluationRun",
    "EvaluationStore",
    "MessageFileError",
    "MessageSource",
    "ParsedMessages",
    "RunStatus",
    "ScoreRow",
    "ScoringOptions",
    "StaticMessageSource",
    "evaluate_agent",
    "overall_score",
    "read_messages",
    "run_evaluation",
    "score_adherence",
    "score_consistency",
    "score_convergence",
    "score_fluency",
    "score_for_agent",
    "score_ideas_quantity",
    "score_rows",
]
