"""The action gate: run the checks on one draft attempt and decide commit, retry or reject.

Semantics follow TinyTroupe's ActionGenerator (FACTS.md) with two documented differences: dimensions are
judged in parallel (each with its own deadline, failing open), and no extra LLM call combines feedback.

Decision table for one attempt (``attempt`` is 1-based, at most ``1 + max_correction_attempts`` attempts):

- the agent chose silence (``skip``) → skip / ``skipped``: passes at once, nothing is committed (TinyTroupe's
  DONE action, which always passes);
- the gate is disabled for the agent, or no check is enabled → commit / ``passed``;
- the agent has fewer committed actions than ``minimum_required_qty_of_actions`` → commit / ``not_gated_yet``;
- every check passed → commit / ``passed`` (first attempt) or ``passed_after_retry``;
- every enabled LLM dimension timed out and similarity (if enabled) passed → commit / ``timeout_pass_through``;
- a check failed and attempts are left → retry / ``corrected`` with feedback;
- a check failed and attempts are exhausted → commit the attempt with the highest sum of dimension scores
  (earliest wins ties; similarity does not add to the total; a timed-out dimension counts at its threshold,
  since it passed) / ``forced_through``, or reject / ``rejected`` when ``continue_on_failure`` is false.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from engine.checks import TokenizedMessage, jaccard_similarity_tokenized, prepare
from engine.errors import JudgeError
from engine.judges.base import Judge
from engine.models import ZERO_USAGE, AgentConfig, Decision, Dimension, Outcome, TokenUsage
from engine.propositions import ACTION_LEVEL_WINDOW_DEFAULTS, PropositionSet, Window
from engine.scoring import DimensionScore, ScoringTarget, score_dimension

log = logging.getLogger(__name__)
DEFAULT_DIMENSION_DEADLINE_S = 5.0
RECENT_FOR_SIMILARITY = 5


@dataclass(frozen=True, slots=True)
class DimensionCheck:
    dimension: Dimension
    score: float
    threshold: float
    passed: bool
    timed_out: bool = False
    error: str | None = None
    reasoning: str = ""
    recommendations: tuple[str, ...] = ()
    usage: TokenUsage = ZERO_USAGE
    calls: int = 0


@dataclass(frozen=True, slots=True)
class SimilarityCheck:
    score: float
    threshold: float
    passed: bool
    most_similar: str | None


@dataclass(frozen=True, slots=True)
class AttemptResult:
    attempt: int
    text: str
    checks: tuple[DimensionCheck, ...] = ()
    similarity: SimilarityCheck | None = None

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks) and (self.similarity is None or self.similarity.passed)

    @property
    def total_score(self) -> float:
        """Sum of dimension scores: the best-attempt criterion (similarity deliberately not added).

        A timed-out dimension passed (fail-open), so it counts at its threshold, not at 0: an attempt is not
        ranked below another merely because the judge was slow on it."""
        return sum(c.threshold if c.timed_out else c.score for c in self.checks)

    @property
    def all_timed_out(self) -> bool:
        return bool(self.checks) and all(c.timed_out for c in self.checks)

    @property
    def usage(self) -> TokenUsage:
        return sum((c.usage for c in self.checks), ZERO_USAGE)

    @property
    def judge_calls(self) -> int:
        return sum(c.calls for c in self.checks)


@dataclass(frozen=True, slots=True)
class AttemptSummary:
    """What the gate remembers of an earlier attempt of the same draft (kept in the pending table)."""

    attempt: int
    text: str
    total_score: float


@dataclass(frozen=True, slots=True)
class GateDecision:
    decision: Decision
    outcome: Outcome
    text: str
    committed_attempt: int | None
    feedback: str | None = None


def gate_active(config: AgentConfig) -> bool:
    return config.gate_enabled and (bool(config.enabled_gate_dimensions()) or config.gate_similarity_enabled)


def pre_decision(
    *, skip: bool, config: AgentConfig, prior_actions: int, attempt: int, text: str
) -> GateDecision | None:
    """The verdict of an attempt that needs no check, or None when the checks must run.

    ``prior_actions`` is the number of the agent's committed actions the gate knows of."""
    if skip:
        return GateDecision(Decision.SKIP, Outcome.SKIPPED, "", None)
    if not gate_active(config):
        return GateDecision(Decision.COMMIT, Outcome.PASSED, text, attempt)
    if prior_actions < config.minimum_required_qty_of_actions:
        return GateDecision(Decision.COMMIT, Outcome.NOT_GATED_YET, text, attempt)
    return None


def check_similarity(draft: TokenizedMessage, recent: Sequence[TokenizedMessage], threshold: float) -> SimilarityCheck:
    """Jaccard on word-token sets against the last 5 committed messages; fails at ``score >= threshold``."""
    result = jaccard_similarity_tokenized(draft, recent, window=RECENT_FOR_SIMILARITY)
    return SimilarityCheck(result.score, threshold, result.score < threshold, result.most_similar)


def _recommendations(score: DimensionScore, threshold: float) -> tuple[str, ...]:
    return tuple(p.recommendations for p in score.low_scoring(threshold) if p.recommendations)


async def check_dimension(
    judge_call: asyncio.Future[DimensionScore] | asyncio.Task[DimensionScore],
    dimension: Dimension,
    threshold: float,
    deadline_s: float,
) -> DimensionCheck:
    """Await one dimension's score within its deadline. A timeout or *any* failure of the judge call passes
    (fail-open) and is marked ``timed_out`` (with ``error`` naming the failure): whatever a provider answers (a
    truncated body the SDK cannot decode, prose, 5xx), the draft gets a verdict; only cancellation propagates."""
    try:
        async with asyncio.timeout(deadline_s):
            score = await judge_call
    except TimeoutError:
        return DimensionCheck(dimension, 0.0, threshold, True, timed_out=True, reasoning="judge deadline passed")
    except Exception as exc:  # fail-open by design: a judge failure never loses the draft
        reason = str(exc) if isinstance(exc, JudgeError) else f"judge call failed: {type(exc).__name__}: {exc}"
        log.warning("%s judge call failed open: %s", dimension.value, reason)
        return DimensionCheck(dimension, 0.0, threshold, True, timed_out=True, error=reason, reasoning=reason)
    return DimensionCheck(
        dimension=dimension,
        score=score.score,
        threshold=threshold,
        passed=score.score >= threshold,
        reasoning=score.reasoning(),
        recommendations=_recommendations(score, threshold),
        usage=score.usage,
        calls=score.calls,
    )


async def run_checks(
    judge: Judge,
    psets: Mapping[Dimension, PropositionSet],
    target: ScoringTarget,
    config: AgentConfig,
    *,
    attempt: int,
    recent: Sequence[TokenizedMessage],
    deadline_s: float = DEFAULT_DIMENSION_DEADLINE_S,
    parallel: bool = True,
    tokens: TokenizedMessage | None = None,
    share_prefix: bool = False,
    hopping: bool = False,
) -> AttemptResult:
    """Similarity first (cheap, no LLM), then every enabled LLM dimension in parallel (or in turn).

    ``tokens`` is the action already tokenised (a caller that caches tokens passes it). ``share_prefix``
    (parallel only) stages the dimensions for the judge's prompt cache: see :func:`_staged`. ``hopping``:
    the judge sees the hopping trajectory window instead of the sliding one (:mod:`engine.windows`)."""
    text = target.action or ""
    similar = config.gate_similarity_enabled
    similarity = check_similarity(tokens or prepare(text), recent, config.max_action_similarity) if similar else None
    dims = [d for d in config.enabled_gate_dimensions() if d in psets and psets[d].propositions]
    if not dims:
        return AttemptResult(attempt=attempt, text=text, similarity=similarity)
    window = replace(ACTION_LEVEL_WINDOW_DEFAULTS, hopping=hopping)

    def judged(d: Dimension) -> asyncio.Task[DimensionScore]:
        return asyncio.ensure_future(score_dimension(judge, psets[d], target, window_defaults=window))

    if parallel:
        tasks = _staged(judge, psets, target, dims, window) if share_prefix else [judged(d) for d in dims]
        checks = list(
            await asyncio.gather(
                *(check_dimension(t, d, config.threshold(d), deadline_s) for t, d in zip(tasks, dims, strict=True))
            )
        )
    else:  # TinyTroupe's way, kept for comparisons (DRIFT_GATE_PARALLEL=false): one dimension after another
        checks = [await check_dimension(judged(d), d, config.threshold(d), deadline_s) for d in dims]
    return AttemptResult(attempt=attempt, text=text, checks=tuple(checks), similarity=similarity)


def _staged(
    judge: Judge, psets: Mapping[Dimension, PropositionSet], target: ScoringTarget, dims: Sequence[Dimension],
    window: Window,
) -> list[asyncio.Task[DimensionScore]]:  # fmt: skip
    """ "First call writes, the others read": every dimension's prompt starts with the same evidence and
    draft (:mod:`engine.prompts`), so one leader, a dimension that includes the persona when there is one
    (its persona part is then cached too), is judged at once and the others start when it has answered
    (whatever the answer), so the provider has its cache entries. Each dimension's deadline still runs from
    the start, so a slow first call cannot hold the draft longer than the deadline."""
    leader_dim = next((d for d in dims if psets[d].include_personas), dims[0])
    share = len(dims) > 1  # a dimension alone has nobody to share the evidence with

    async def scored(d: Dimension, after: asyncio.Task[DimensionScore] | None) -> DimensionScore:
        if after is not None:
            await asyncio.wait([after])  # its outcome is its own dimension's; only its timing matters here
        return await score_dimension(judge, psets[d], target, window_defaults=window, share_history=share)

    leader = asyncio.ensure_future(scored(leader_dim, None))
    return [leader if d is leader_dim else asyncio.ensure_future(scored(d, leader)) for d in dims]


def best_attempt(current: AttemptResult, earlier: Sequence[AttemptSummary]) -> AttemptSummary:
    """Highest total score; the earliest attempt wins ties."""
    candidates = [*earlier, AttemptSummary(current.attempt, current.text, current.total_score)]
    return max(sorted(candidates, key=lambda a: a.attempt), key=lambda a: a.total_score)


def decide(result: AttemptResult, earlier: Sequence[AttemptSummary], config: AgentConfig) -> GateDecision:
    """The verdict for one checked attempt (see the module docstring)."""
    if result.passed:
        if result.all_timed_out:
            return GateDecision(Decision.COMMIT, Outcome.TIMEOUT_PASS_THROUGH, result.text, result.attempt)
        outcome = Outcome.PASSED if result.attempt == 1 else Outcome.PASSED_AFTER_RETRY
        return GateDecision(Decision.COMMIT, outcome, result.text, result.attempt)
    if result.attempt < 1 + config.max_correction_attempts:
        return GateDecision(
            Decision.RETRY, Outcome.CORRECTED, result.text, None, feedback=build_feedback(result, config)
        )
    if not config.continue_on_failure:
        return GateDecision(Decision.REJECT, Outcome.REJECTED, result.text, None)
    best = best_attempt(result, earlier)
    return GateDecision(Decision.COMMIT, Outcome.FORCED_THROUGH, best.text, best.attempt)


def _escalation(attempt: int, max_attempts: int) -> str:
    """The closing instruction of every retry feedback (TinyTroupe: from the first retry on, change more
    radically on each failure, and stopping beats acting poorly; here stopping is ``skip: true``)."""
    base = (
        "Rewrite the message so that it passes every check above, staying in character and answering "
        "the same situation. If it fails again, change it more radically each time."
    )
    silence = (
        "If you cannot write a message that passes, stay silent instead: send the draft again with "
        "skip: true. Saying nothing is better than acting poorly."
    )
    if attempt <= 1:
        return f"{base}\n{silence}"
    stronger = (
        f"This is failed attempt {attempt} of {max_attempts}. Each failure means your changes were too "
        "timid: change the message MORE RADICALLY than last time — different opening, different content, "
        "different phrasing."
    )
    return f"{base}\n{stronger}\n{silence}"


def build_feedback(result: AttemptResult, config: AgentConfig) -> str:
    """Retry feedback: the failed attempt, one section per failed check, and an escalating instruction."""
    lines = [
        "Your tentative message failed the quality gate.",
        "",
        "Tentative message:",
        f"> {result.text}",
        "",
    ]
    for check in result.checks:
        if check.passed:
            continue
        lines.append(f"## {check.dimension.value}: {check.score:.2f} (needs at least {check.threshold:g})")
        if check.reasoning:
            lines.append(f"Why: {check.reasoning}")
        lines.extend(f"- Recommendation: {rec}" for rec in check.recommendations)
        lines.append("")
    if result.similarity is not None and not result.similarity.passed:
        lines.append(f"## similarity: {result.similarity.score:.2f} (must stay below {result.similarity.threshold:g})")
        lines.append(f"Too similar to your recent message: > {result.similarity.most_similar}")
        lines.append("- Recommendation: say something new, in different words.")
        lines.append("")
    lines.append(_escalation(result.attempt, 1 + config.max_correction_attempts))
    return "\n".join(lines)
