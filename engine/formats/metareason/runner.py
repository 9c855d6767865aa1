"""Running a prompt family: every variant to the target, every answer to the oracles, then the statistics.

* **Concurrency** — ``concurrency`` workers take variants from one queue, so at most that many variants are
  in flight (the judge's own call policy caps its calls on top).
* **Cached answers** — non-recorded targets are wrapped in a content-keyed
  :class:`~engine.formats.targets.CachedTarget`: a variant whose prompt and parameters equal an earlier one's
  reuses that answer instead of calling the target again (``details.cached``).
* **Resumable** — with a journal (``--out FILE.jsonl``) each finished variant is appended as one JSON line
  ``{"run_id", "item"}`` as soon as it is scored; a rerun with the same journal keeps the run id, skips every
  variant already answered there (same id = same index, parameters and prompt) and retries the ones whose
  target failed. A torn last line (a crash mid-write) is ignored.
* **Calibration** — a ``statistical_calibration`` oracle scores a variant 1 when every other oracle passed
  on it and 0 otherwise; :mod:`.summary` compares that success rate with ``expected_confidence``.

A target error (no answer) marks the variant ``error`` and leaves it out of every oracle's n; an oracle
error counts as a failure of that oracle (see :mod:`.oracles`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import orjson
from pydantic import ValidationError

from engine.errors import DriftError
from engine.formats.metareason import model as m
from engine.formats.metareason.oracles import Oracle
from engine.formats.metareason.sampling import Variant, variants
from engine.formats.metareason.summary import summarize
from engine.formats.results import FormatRun, ItemResult, ItemScore
from engine.formats.targets import CachedTarget, RecordedTarget, Target, TargetRequest

ResultHook = Callable[[ItemResult], None]
#: called once before the first variant: (variants in the run, variants still to answer)
StartHook = Callable[[int, int], None]


@dataclass
class Journal:
    """The resumable record of a run: one ``{"run_id", "item"}`` line per finished variant."""

    path: Path | None
    run_id: str | None = None
    done: dict[str, ItemResult] = field(default_factory=dict)
    _file: IO[bytes] | None = None

    def load(self, ids: set[str]) -> None:
        """Answered items of this run's variants (``ids``); the run id of the first line that has one."""
        if self.path is None or not self.path.is_file():
            return
        for line in self.path.read_bytes().splitlines():
            try:
                record = orjson.loads(line)
                item = ItemResult.model_validate(record["item"])
            except (orjson.JSONDecodeError, ValidationError, KeyError, TypeError):
                continue
            if item.item_id not in ids:
                continue  # another family, or another n: a different design
            self.run_id = self.run_id or record.get("run_id")
            if item.error is None:
                self.done[item.item_id] = item

    def append(self, run_id: str, item: ItemResult) -> None:
        if self.path is None:
            return
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("ab")
        self._file.write(orjson.dumps({"run_id": run_id, "item": item.model_dump(mode="json")}) + b"\n")
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class Runner:
    def __init__(
        self,
        family: m.PromptFamily,
        *,
        source: str,
        target: Target,
        oracles: Sequence[Oracle],
        judge_name: str,
        concurrency: int = 8,
        journal: Path | None = None,
        n: int | None = None,
        on_result: ResultHook | None = None,
        on_start: StartHook | None = None,
    ) -> None:
        self.family = family
        self.source = source
        self.target: Target = target if isinstance(target, RecordedTarget) else CachedTarget(target, by_content=True)
        self.oracles = list(oracles)
        self.judge_name = judge_name
        self.concurrency = max(1, concurrency)
        self.journal = Journal(journal)
        self.n = n
        self.on_result = on_result
        self.on_start = on_start
        self._calibration = [n for n, o in family.oracles.items() if isinstance(o, m.StatisticalCalibrationOracle)]

    def plan(self) -> tuple[list[Variant], list[Variant]]:
        """All variants of the run and those still to do (after reading the journal)."""
        every = variants(self.family, self.n)
        self.journal.load({v.id for v in every})
        return every, [v for v in every if v.id not in self.journal.done]

    async def run(self) -> FormatRun:
        started = datetime.now(UTC)
        every, todo = self.plan()
        if self.on_start is not None:
            self.on_start(len(every), len(todo))
        run = FormatRun(format="metareason", source=self.source, target=self.target.name, judge=self.judge_name)
        run_id = self.journal.run_id or run.run_id
        results = {v.id: self.journal.done[v.id] for v in every if v.id in self.journal.done}
        queue: asyncio.Queue[Variant] = asyncio.Queue()
        for variant in todo:
            queue.put_nowait(variant)

        async def worker() -> None:
            while not queue.empty():
                variant = queue.get_nowait()
                item = await self.score_variant(variant)
                results[variant.id] = item
                self.journal.append(run_id, item)
                if self.on_result is not None:
                    self.on_result(item)

        try:
            await asyncio.gather(*(worker() for _ in range(min(self.concurrency, len(todo)) or 1)))
        finally:
            self.journal.close()
        items = tuple(results[v.id] for v in every)
        status = "completed" if all(i.error is None for i in items) else "partial"
        summary = summarize(self.family, every, items, resumed=len(every) - len(todo))
        return run.model_copy(
            update={
                "run_id": run_id,
                "items": items,
                "summary": summary,
                "status": status,
                "started_at": started,
                "finished_at": datetime.now(UTC),
            }
        )

    async def score_variant(self, variant: Variant) -> ItemResult:
        details: dict[str, Any] = {"index": variant.index, "params": variant.params, "prompt": variant.prompt}
        request = TargetRequest(
            variant.id, variant.prompt, payload={"params": variant.params, "family": self.family.prompt_id}
        )
        try:
            answer = await self.target.answer(request)
        except DriftError as exc:
            return ItemResult(
                item_id=variant.id, verdict="error", error=f"{type(exc).__name__}: {exc}", details=details
            )
        scores = list(await asyncio.gather(*(oracle.evaluate(variant, answer.text) for oracle in self.oracles)))
        scores += self._calibration_scores(scores)
        passed = all(s.passed for s in scores)
        values = [s.score for s in scores if s.score is not None]
        details["cached"] = answer.cached
        return ItemResult(
            item_id=variant.id,
            scores=tuple(scores),
            score=sum(values) / len(values) if values else None,
            verdict="pass" if passed else "fail",
            answer=answer.text,
            input_tokens=answer.usage.input_tokens,
            output_tokens=answer.usage.output_tokens,
            latency_ms=answer.latency_ms,
            details=details,
        )

    def _calibration_scores(self, scores: Sequence[ItemScore]) -> list[ItemScore]:
        success = bool(scores) and all(s.passed for s in scores)
        basis = [s.name for s in scores]
        return [
            ItemScore(
                name=name,
                type="statistical_calibration",
                score=1.0 if success else 0.0,
                passed=success,
                verdict="pass" if success else "fail",
                details={"success_of": basis},
            )
            for name in self._calibration
        ]
