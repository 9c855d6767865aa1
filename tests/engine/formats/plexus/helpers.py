"""Small builders for the Plexus tests: scores from YAML text, scripted models, a quick item runner."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import yaml

from engine.formats.plexus.graph import Item, ScoreResult, run_score
from engine.formats.plexus.model import Score, Scorecard
from engine.formats.plexus.nodes import NodeContext
from engine.formats.sandbox import Limits
from engine.llm.base import Completion, CompletionRequest
from engine.llm.scripted import ScriptedTextModel

#: tight limits so the misbehaving-code tests end quickly
TEST_LIMITS = Limits(wall_s=4.0, cpu_s=1, memory_mb=256, file_mb=1)


def score(text: str) -> Score:
    return Score.model_validate(yaml.safe_load(text))


def scorecard(text: str) -> Scorecard:
    return Scorecard.model_validate(yaml.safe_load(text))


def model(pairs: Sequence[tuple[str, str | Sequence[str]]], default: str = "") -> ScriptedTextModel:
    return ScriptedTextModel.from_pairs(pairs, default=default)


def context(text_model: ScriptedTextModel | BlockingModel) -> NodeContext:
    return NodeContext(text_model, code_limits=TEST_LIMITS)


async def run(one: Score, text_model: ScriptedTextModel, text: str = "hello", **kw: object) -> ScoreResult:
    return await run_score(one, Item(text, dict(kw)), context(text_model), {})


class BlockingModel:
    """Answers only once ``expected`` requests are waiting at the same time (proves concurrency)."""

    name = "scripted:blocking"

    def __init__(self, expected: int, reply: str) -> None:
        self.expected = expected
        self.reply = reply
        self.waiting = 0
        self.all_here = asyncio.Event()

    async def complete(self, request: CompletionRequest) -> Completion:
        self.waiting += 1
        if self.waiting >= self.expected:
            self.all_here.set()
        await self.all_here.wait()
        return Completion(self.reply, self.name)
