"""The oracles that score one variant's answer, each giving an :class:`~engine.formats.results.ItemScore`.

* ``llm_judge`` asks our judge layer (reasoning before the decision, strict parsing, one repair turn):
  ``binary`` is one true/false check of the rubric (score 1 or 0); ``score`` is one 0–9 rating mapped to
  [0, 1] as value / 9; ``structured`` checks each numbered criterion of the rubric as its own claim in one
  batched call (score = share of criteria met, ``criteria`` in the details; a rubric without numbered
  criteria is rated as ``score``). The file's ``judge_model`` and ``temperature`` are recorded; the judge
  that answers is the one given to the run (``--judge``).
* ``embedding_similarity`` compares the answer with ``canonical_answer``: cosine similarity, or
  ``euclidean`` as 1 − ‖â − b̂‖ / 2 on unit-normalised vectors (in [0, 1]).
* ``custom`` calls an oracle registered by the installation (:mod:`.custom`).

An oracle that fails (judge error or unparseable answer, embeddings error, custom oracle error or score out
of range) records ``error`` and ``passed=False``: a failure, never a silent pass. ``statistical_calibration``
is not evaluated here; the runner derives it from the other oracles (see :mod:`.runner`).
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from engine.errors import ConfigurationError, DriftError
from engine.formats.metareason import model as m
from engine.formats.metareason.custom import CustomOracleImpl, CustomOracles
from engine.formats.metareason.embeddings import Embeddings
from engine.formats.metareason.sampling import Variant
from engine.formats.results import ItemScore
from engine.judges.base import MAX_BATCH_CLAIMS, Claim, Judge, JudgeMode, JudgeRequest
from engine.models import Event, EventKind

_CRITERION = re.compile(r"^\s*(\d{1,2})[.)]\s+(\S.*)$", re.MULTILINE)
SCORE_SCALE_MAX = 9


class Oracle(Protocol):
    name: str
    type: str
    threshold: float

    async def evaluate(self, variant: Variant, answer: str) -> ItemScore: ...


def scored(oracle: Oracle, score: float, details: Mapping[str, Any]) -> ItemScore:
    passed = score >= oracle.threshold
    return ItemScore(
        name=oracle.name,
        type=oracle.type,
        score=score,
        passed=passed,
        verdict="pass" if passed else "fail",
        details=dict(details),
    )


def failed(oracle: Oracle, error: str, details: Mapping[str, Any] | None = None) -> ItemScore:
    return ItemScore(
        name=oracle.name, type=oracle.type, passed=False, verdict="error", error=error, details=dict(details or {})
    )


class LlmJudgeOracle:
    type = "llm_judge"

    def __init__(self, name: str, spec: m.LlmJudgeOracle, judge: Judge) -> None:
        self.name, self.threshold, self._spec, self._judge = name, spec.threshold, spec, judge
        criteria = [text.strip() for _, text in _CRITERION.findall(spec.rubric)]
        self._criteria = criteria[:MAX_BATCH_CLAIMS] if spec.output_format == "structured" and len(criteria) > 1 else []

    def _request(self, variant: Variant, answer: str) -> JudgeRequest:
        if self._criteria:
            mode = JudgeMode.CHECK
            claims = tuple(
                Claim(f"{self.name}.{i}", f"The response meets this criterion: {text}")
                for i, text in enumerate(self._criteria, 1)
            )
        else:
            mode = JudgeMode.CHECK if self._spec.output_format == "binary" else JudgeMode.SCORE
            claims = (Claim(self.name, f"The response to the prompt meets this rubric:\n{self._spec.rubric.strip()}"),)
        trajectory = (
            Event("target", "Target", variant.prompt, EventKind.STIMULUS, source="evaluator"),
            Event("target", "Target", answer, EventKind.ACTION),
        )
        return JudgeRequest(mode=mode, claims=claims, target_name=variant.id, agent_id="target", trajectory=trajectory)

    async def evaluate(self, variant: Variant, answer: str) -> ItemScore:
        details: dict[str, Any] = {
            "judge": self._judge.name,
            "judge_model_in_file": self._spec.judge_model,
            "output_format": self._spec.output_format,
        }
        try:
            result = await self._judge.evaluate(self._request(variant, answer))
        except DriftError as exc:
            return failed(self, f"{type(exc).__name__}: {exc}", details)
        answers = result.answers
        details["reasoning"] = [a.reasoning for a in answers] if self._criteria else answers[0].reasoning
        if self._criteria:
            met = [bool(a.value) for a in answers]
            details["criteria"] = dict(zip(self._criteria, met, strict=True))
            return scored(self, sum(met) / len(met), details)
        value = answers[0].value
        if isinstance(value, bool):
            return scored(self, 1.0 if value else 0.0, details)
        details["value"] = value
        return scored(self, value / SCORE_SCALE_MAX, details)


class EmbeddingSimilarityOracle:
    type = "embedding_similarity"

    def __init__(self, name: str, spec: m.EmbeddingSimilarityOracle, embeddings: Embeddings) -> None:
        self.name, self.threshold, self._spec, self._embeddings = name, spec.threshold, spec, embeddings
        self._canonical: list[float] | None = None
        self._lock = asyncio.Lock()

    async def _reference(self) -> list[float]:
        async with self._lock:
            if self._canonical is None:
                self._canonical = (
                    await self._embeddings.embed([self._spec.canonical_answer], self._spec.embedding_model)
                )[0]
            return self._canonical

    async def evaluate(self, variant: Variant, answer: str) -> ItemScore:
        details: dict[str, Any] = {"embeddings": self._embeddings.name, "method": self._spec.method}
        try:
            reference = await self._reference()
            vector = (await self._embeddings.embed([answer], self._spec.embedding_model))[0]
            similarity = similarity_of(reference, vector, self._spec.method)
        except (DriftError, ValueError) as exc:
            return failed(self, f"{type(exc).__name__}: {exc}", details)
        details["similarity"] = similarity
        return scored(self, similarity, details)


def similarity_of(a: Sequence[float], b: Sequence[float], method: str) -> float:
    if len(a) != len(b):
        raise ValueError(f"embedding dimensions differ ({len(a)} vs {len(b)})")
    norm_a, norm_b = math.sqrt(math.fsum(x * x for x in a)), math.sqrt(math.fsum(x * x for x in b))
    if norm_a == 0 or norm_b == 0:
        return 0.0
    if method == "cosine_similarity":
        return math.fsum(x * y for x, y in zip(a, b, strict=True)) / (norm_a * norm_b)
    distance = math.sqrt(math.fsum((x / norm_a - y / norm_b) ** 2 for x, y in zip(a, b, strict=True)))
    return 1.0 - distance / 2.0


class CustomOracle:
    type = "custom"

    def __init__(self, name: str, spec: m.CustomOracle, impl: CustomOracleImpl) -> None:
        self.name, self.threshold, self._spec, self._impl = name, spec.threshold, spec, impl

    async def evaluate(self, variant: Variant, answer: str) -> ItemScore:
        details: dict[str, Any] = {"oracle": self._spec.registered_name}
        context = {"prompt": variant.prompt, "params": dict(variant.params), "variant_id": variant.id}
        try:
            result = await self._impl.evaluate(answer, context)
        except Exception as exc:  # installed plugin code: any failure is this variant's recorded failure
            return failed(self, f"{type(exc).__name__}: {exc}", details)
        score, extra = result if isinstance(result, tuple) else (result, {})
        if isinstance(score, bool) or not isinstance(score, int | float) or not 0.0 <= float(score) <= 1.0:
            return failed(self, f"custom oracle returned {score!r}, not a score in [0, 1]", details)
        details.update(dict(extra) if isinstance(extra, Mapping) else {"extra": str(extra)})
        return scored(self, float(score), details)


def build_oracles(
    family: m.PromptFamily, *, judge: Judge | None, embeddings: Embeddings | None, custom: CustomOracles
) -> list[Oracle]:
    """The per-variant oracles of ``family`` (calibration oracles are derived later, by the runner)."""
    built: list[Oracle] = []
    for name, spec in family.oracles.items():
        if isinstance(spec, m.LlmJudgeOracle):
            if judge is None:
                raise ConfigurationError(f"oracle {name!r} needs a judge (--judge)")
            built.append(LlmJudgeOracle(name, spec, judge))
        elif isinstance(spec, m.EmbeddingSimilarityOracle):
            if embeddings is None:
                raise ConfigurationError(f"oracle {name!r} needs embeddings (--embeddings)")
            built.append(EmbeddingSimilarityOracle(name, spec, embeddings))
        elif isinstance(spec, m.CustomOracle):
            built.append(CustomOracle(name, spec, custom.build(spec.registered_name, spec.config)))
    return built
