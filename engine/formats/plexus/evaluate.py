"""Evaluating a scorecard against labels: run every item, compare, and summarise as one FormatRun.

Each item runs the scorecard (or one score and its dependencies). Per evaluated score, a prediction that is
``SKIPPED`` or ``ERROR`` — or an item without a label column for it — is left out of the metrics and
counted. Everything lands in a :class:`~engine.formats.results.FormatRun` (``format="plexus"``) whose
``judge`` names the model that answered, so a scripted run says so.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from engine.formats.plexus.dataset import Row
from engine.formats.plexus.graph import Item, ScoreResult
from engine.formats.plexus.metrics import Agreement, agreement, normalise_label
from engine.formats.plexus.model import Scorecard
from engine.formats.plexus.nodes import NodeContext
from engine.formats.plexus.scorecard import run_scorecard
from engine.formats.results import FormatRun, ItemResult, ItemScore


@dataclass(frozen=True)
class EvaluationOptions:
    scores: tuple[str, ...]
    positive_class: str = "yes"
    concurrency: int = 4
    timeout_s: float = 120.0


def _item_score(name: str, result: ScoreResult, row: Row) -> ItemScore:
    found, raw = row.label(name)
    label = normalise_label(raw) if found else None
    predicted = normalise_label(result.value)
    verdict: str
    if result.status != "ok":
        verdict = result.status
    elif label is None:
        verdict = "unlabelled"
    else:
        verdict = "agree" if label == predicted else "disagree"
    return ItemScore(
        name=name,
        type="plexus",
        value=result.value,
        verdict=verdict,
        passed=None if verdict not in {"agree", "disagree"} else verdict == "agree",
        error=result.error,
        details={"label": label, "explanation": result.explanation, "path": list(result.path)},
    )


async def _one(card: Scorecard, row: Row, ctx: NodeContext, options: EvaluationOptions) -> ItemResult:
    started = time.perf_counter()
    only = options.scores[0] if len(options.scores) == 1 else None
    results = await run_scorecard(
        card, Item(row.text, row.metadata, row.item_id), ctx, only=only, timeout_s=options.timeout_s
    )
    scores = tuple(_item_score(name, results[name], row) for name in options.scores)
    errors = [f"{s.name}: {s.error}" for s in scores if s.error]
    return ItemResult(
        item_id=row.item_id,
        scores=scores,
        error="; ".join(errors) or None,
        latency_ms=(time.perf_counter() - started) * 1000,
        details={"line": row.line},
    )


def summarise(items: Sequence[ItemResult], options: EvaluationOptions) -> dict[str, Agreement]:
    out = {}
    for name in options.scores:
        mine = [s for item in items for s in item.scores if s.name == name]
        pairs = [(str(s.details["label"]), normalise_label(s.value)) for s in mine if s.passed is not None]
        out[name] = agreement(
            name,
            pairs,
            positive_class=options.positive_class,
            skipped=sum(1 for s in mine if s.verdict == "skipped"),
            errors=sum(1 for s in mine if s.verdict == "error"),
            unlabelled=sum(1 for s in mine if s.verdict == "unlabelled"),
        )
    return out


async def evaluate(
    card: Scorecard,
    rows: Sequence[Row],
    ctx: NodeContext,
    options: EvaluationOptions,
    *,
    source: str,
    dataset: str,
    progress: Callable[[ItemResult], None] | None = None,
) -> FormatRun:
    started_at = datetime.now(UTC)
    gate = asyncio.Semaphore(max(1, options.concurrency))

    async def guarded(row: Row) -> ItemResult:
        async with gate:
            item = await _one(card, row, ctx, options)
        if progress is not None:
            progress(item)
        return item

    items = await asyncio.gather(*(guarded(row) for row in rows))
    metrics = summarise(items, options)
    failed = any(item.error for item in items)
    return FormatRun(
        format="plexus",
        source=source,
        target=f"dataset:{dataset}",
        judge=ctx.label,
        status="partial" if failed else "completed",
        started_at=started_at,
        finished_at=datetime.now(UTC),
        items=tuple(items),
        summary={
            "scorecard": card.name,
            "model": ctx.label,
            "positive_class": normalise_label(options.positive_class),
            "scores": {name: m.as_json() for name, m in metrics.items()},
        },
    )
