"""More than one proposition library and judge in one worker, selected per agent.

An agent's configuration may name its own propositions tree (``propositions``) and judge spec (``judge``) —
``drift shadow promote`` sets them. The worker builds each distinct tree and spec once, on first use, and keeps
it; ``None`` is the worker's own library and judge (``DRIFT_PROPOSITIONS_DIR``, ``DRIFT_JUDGE``). A judge is
kept per budget lane: the gate's calls hold gate slots, a shadow's candidate calls hold the shadows' slots
(:mod:`engine.judges.budget`). A tree or spec that cannot be built (deleted since it was validated) is logged
once and the worker's own is used instead: a bad candidate never stops the gate.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from engine.errors import DriftError
from engine.judges.base import Judge
from engine.judges.budget import JudgeBudget
from engine.library import PropositionLibrary
from engine.models import AgentConfig

log = logging.getLogger(__name__)

T = TypeVar("T")
JudgeFactory = Callable[[str], Judge]  # spec -> a judge without limits of its own (the budget applies them)


class Candidates:
    """The libraries and judges a worker holds, by propositions tree and by (judge spec, lane)."""

    def __init__(
        self,
        library: PropositionLibrary,
        judges: dict[str, Judge],
        make: JudgeFactory,
        budget: JudgeBudget,
        deadline_s: float | None,
    ) -> None:
        """``judges``: the worker's own judge per lane, already on its lane."""
        self.default_library, self._lane_judges, self._make = library, judges, make
        self._budget, self._deadline_s = budget, deadline_s
        self._libraries: dict[str, PropositionLibrary] = {}
        self._judges: dict[tuple[str, str], Judge] = {}
        self._failed: set[str] = set()

    def library(self, tree: str | None) -> PropositionLibrary:
        if tree is None or tree in self._failed:
            return self.default_library
        held = self._libraries.get(tree)
        if held is None:
            if not Path(tree).is_dir():
                return self._fallback(tree, "no such propositions directory", self.default_library)
            held = self._libraries[tree] = PropositionLibrary(Path(tree))
        return held

    def judge(self, spec: str | None, lane: str) -> Judge:
        """The judge of ``spec`` (None: the worker's) whose calls hold slots of ``lane``."""
        default = self._lane_judges[lane]
        if spec is None or spec in self._failed:
            return default
        held = self._judges.get((spec, lane))
        if held is None:
            try:
                built = self._make(spec)
            except DriftError as exc:
                return self._fallback(spec, str(exc), default)
            held = self._judges[spec, lane] = self._budget.judge(built, lane, self._deadline_s)
        return held

    def pick(self, config: AgentConfig, lane: str) -> tuple[Judge, PropositionLibrary]:
        return self.judge(config.judge, lane), self.library(config.propositions)

    def _fallback(self, name: str, why: str, default: T) -> T:
        if name not in self._failed:
            log.error("candidate %s cannot be built (%s): the worker's own is used", name, why)
            self._failed.add(name)
        return default
