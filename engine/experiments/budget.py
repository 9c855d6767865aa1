"""Scale, cost bounds and the budget cap of an experiment run.

* :func:`scale_plans` keeps the first ``ceil(scale × sessions)`` sessions of the plan (at least 2 per arm);
  plans are ordered repetition → theme → group, so a small scale still covers several themes and groups.
* :func:`estimate_session` bounds one session's LLM calls and tokens **before** it runs: every turn at its
  maximum attempts (the arm's gate regenerations), every gate judge call, every evaluation call (doubled by
  double-check). Token bounds use per-call allowances (:class:`Allowance`) — an upper estimate for budgeting,
  not a measurement; what was really spent is metered as the run goes.
* :class:`Budget` decides whether one more session may start: spent + the running sessions' estimates + the
  next one's must stay within ``--budget-usd`` / ``--max-tokens``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from engine.experiments.metrics import MetricSets
from engine.models import TokenUsage
from engine.pricing import PriceTable
from engine.scoring import JudgeStrategy
from engine.simulation.plan import SessionPlan
from engine.simulation.scenario import Scenario

MIN_SESSIONS = 2


def scale_plans(plans: Sequence[SessionPlan], scale: float) -> list[SessionPlan]:
    if not 0 < scale <= 1:
        raise ValueError(f"scale must be in (0, 1], not {scale}")
    keep = min(len(plans), max(MIN_SESSIONS, math.ceil(scale * len(plans))))
    return list(plans[:keep])


@dataclass(frozen=True, slots=True)
class Allowance:
    """Tokens allowed per call when bounding costs (input, output)."""

    actor: tuple[int, int] = (6000, 600)
    judge: tuple[int, int] = (8000, 800)


@dataclass(frozen=True, slots=True)
class CallEstimate:
    actor_calls: int
    judge_calls: int
    actor_tokens: TokenUsage
    judge_tokens: TokenUsage

    @property
    def calls(self) -> int:
        return self.actor_calls + self.judge_calls

    @property
    def tokens(self) -> int:
        usage = self.actor_tokens + self.judge_tokens
        return usage.input_tokens + usage.output_tokens

    def times(self, n: int) -> CallEstimate:
        return CallEstimate(self.actor_calls * n, self.judge_calls * n, _times(self.actor_tokens, n),
                            _times(self.judge_tokens, n))  # fmt: skip

    def cost(self, prices: PriceTable, actor: str, judge: str) -> float | None:
        actor_cost, judge_cost = prices.cost(actor, self.actor_tokens), prices.cost(judge, self.judge_tokens)
        return None if actor_cost is None or judge_cost is None else actor_cost + judge_cost


def _times(usage: TokenUsage, n: int) -> TokenUsage:
    return TokenUsage(usage.input_tokens * n, usage.output_tokens * n)


def _calls(claims: int, strategy: JudgeStrategy) -> int:
    return claims if strategy is JudgeStrategy.INDIVIDUAL else math.ceil(claims / 10)


def estimate_session(
    scenario: Scenario,
    arm: str,
    sets: MetricSets,
    *,
    strategy: JudgeStrategy = JudgeStrategy.INDIVIDUAL,
    allowance: Allowance = Allowance(),
) -> CallEstimate:
    """An upper bound of one session's calls and tokens in ``arm``."""
    config = getattr(scenario.arms, arm).config()
    turns = scenario.group_size * (scenario.steps.introduction + scenario.steps.mission) + 1
    gates = sum(bool(getattr(config, f"gate_{d}_enabled")) for d in ("adherence", "consistency", "fluency"))
    attempts = 1 + (config.max_correction_attempts if gates else 0)
    actor_calls = turns * attempts + 1  # + the extraction
    interventions = getattr(scenario.arms, arm).interventions
    checks = turns if (interventions.variety or interventions.anti_convergence) else 0
    factor = 2 if scenario.evaluation.double_check else 1
    per_agent = sum(_calls(len(p.propositions), strategy) for p in sets.agent.values())
    per_session = sum(_calls(len(p.propositions), strategy) for p in sets.environment.values())
    evaluation = factor * (scenario.group_size * per_agent + per_session)
    judge_calls = turns * attempts * gates + checks + evaluation
    return CallEstimate(
        actor_calls, judge_calls, _times(TokenUsage(*allowance.actor), actor_calls),
        _times(TokenUsage(*allowance.judge), judge_calls),
    )  # fmt: skip


@dataclass
class Budget:
    """The cap of a run: dollars (``max_usd``) or tokens (``max_tokens``); neither = no cap."""

    max_usd: float | None = None
    max_tokens: int | None = None
    spent_usd: float = 0.0
    spent_tokens: int = 0
    reserved: dict[str, tuple[float, int]] = field(default_factory=dict)

    def admits(self, estimate_usd: float | None, estimate_tokens: int) -> bool:
        usd = self.spent_usd + sum(u for u, _ in self.reserved.values()) + (estimate_usd or 0.0)
        tokens = self.spent_tokens + sum(t for _, t in self.reserved.values()) + estimate_tokens
        if self.max_usd is not None and (estimate_usd is None or usd > self.max_usd):
            return False
        return self.max_tokens is None or tokens <= self.max_tokens

    def reserve(self, key: str, estimate_usd: float | None, estimate_tokens: int) -> None:
        self.reserved[key] = (estimate_usd or 0.0, estimate_tokens)

    def settle(self, key: str, usd: float | None, tokens: int) -> None:
        self.reserved.pop(key, None)
        self.spent_usd += usd or 0.0
        self.spent_tokens += tokens
