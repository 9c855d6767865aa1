"""Running a scorecard on one item: dependencies, conditional execution, concurrency.

``depends_on`` is a list (run after those scores) or a map of conditions (``operator`` ``==`` / ``!=`` /
``in`` / ``not in`` and a ``value``; a plain string means ``==``); values are compared lower-cased and
stripped. A score whose condition fails — or one of whose dependencies was skipped — is ``SKIPPED``. Results
of a score's (transitive) dependencies are its ``results``. Scores with no path between them run concurrently.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping

from engine.formats.plexus.graph import SKIPPED, Item, ScoreResult, run_score
from engine.formats.plexus.loader import dependency_names
from engine.formats.plexus.model import DependencyCondition, Score, Scorecard
from engine.formats.plexus.nodes import NodeContext


def condition_met(condition: DependencyCondition | str, value: str) -> bool:
    if isinstance(condition, str):
        condition = DependencyCondition(operator="==", value=condition)
    seen = value.strip().lower()
    wanted = condition.value if isinstance(condition.value, list) else [condition.value]
    normalised = [w.strip().lower() for w in wanted]
    if condition.operator == "==":
        return seen == normalised[0]
    if condition.operator == "!=":
        return seen != normalised[0]
    if condition.operator == "in":
        return seen in normalised
    return seen not in normalised


def skip_reason(score: Score, results: Mapping[str, ScoreResult]) -> str | None:
    for name in dependency_names(score):
        dependency = results[name]
        if dependency.status == "skipped":
            return f"dependency {name!r} was skipped"
        if isinstance(score.depends_on, dict) and not condition_met(score.depends_on[name], dependency.value):
            return f"condition on {name!r} not met (its value is {dependency.value!r})"
    return None


def closure(card: Scorecard, names: Iterable[str]) -> list[Score]:
    """The named scores and every score they depend on, in file order."""
    by_name = {s.name: s for s in card.all_scores()}
    wanted: set[str] = set()
    stack = list(names)
    while stack:
        name = stack.pop()
        if name not in wanted:
            wanted.add(name)
            stack.extend(dependency_names(by_name[name]))
    return [s for s in card.all_scores() if s.name in wanted]


async def run_scorecard(
    card: Scorecard, item: Item, ctx: NodeContext, *, only: str | None = None, timeout_s: float = 120.0
) -> dict[str, ScoreResult]:
    scores = closure(card, [only]) if only else card.all_scores()
    tasks: dict[str, asyncio.Task[ScoreResult]] = {}

    async def one(score: Score) -> ScoreResult:
        needed = closure(card, dependency_names(score))
        done = {s.name: await tasks[s.name] for s in needed}
        reason = skip_reason(score, done)
        if reason is not None:
            return ScoreResult(score.name, SKIPPED, reason, status="skipped")
        return await run_score(score, item, ctx, done, timeout_s=timeout_s)

    for score in scores:
        tasks[score.name] = asyncio.ensure_future(one(score))
    await asyncio.gather(*tasks.values())
    return {name: task.result() for name, task in tasks.items()}
