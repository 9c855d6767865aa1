"""Running one score's graph over one item.

Nodes run in file order from the first. After a node its ``classification``, ``explanation``, ``value`` and
``confidence`` are stored at the top of the state and under the node's name. Routing out of a node:

1. ``conditions`` — the state field (default ``classification``), lower-cased and stripped, is compared with
   each condition's ``value``; the first match sets its ``output`` and goes to its ``node`` (default: the
   next node; ``END`` ends the graph);
2. else ``edge`` — sets its ``output`` and goes to its ``node``;
3. else ``output`` — sets it and goes on to the next node; else simply the next node.

An output is a value-setter: ``alias: field`` copies the state field when it exists, else writes the literal.
The score-level ``output`` runs last, except for fields a fired condition set. The result's ``value`` is the
state's ``value``, else its ``classification``, else ``"No"``; a timeout or an exception gives ``"ERROR"``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from engine.errors import DriftError
from engine.formats.plexus.model import END, Node, Score
from engine.formats.plexus.nodes import NodeContext, run_node
from engine.formats.plexus.templates import TemplateProblem
from engine.propositions.yamlsource import yaml_text

ERROR = "ERROR"
SKIPPED = "SKIPPED"
NODE_FIELDS = ("classification", "explanation", "value", "confidence")
#: a graph whose edges loop back is stopped after this many node runs per node
MAX_VISITS_PER_NODE = 5

Status = Literal["ok", "skipped", "error"]


@dataclass(frozen=True)
class Item:
    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)
    item_id: str = "item"


@dataclass(frozen=True)
class ScoreResult:
    name: str
    value: str
    explanation: str | None = None
    confidence: float | None = None
    path: tuple[str, ...] = ()
    error: str | None = None
    status: Status = "ok"
    state: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"value": self.value, "explanation": self.explanation, "path": list(self.path)}
        if self.confidence is not None:
            out["confidence"] = self.confidence
        if self.error is not None:
            out["error"] = self.error
        return out


class GraphError(RuntimeError):
    """The graph itself misbehaved (a loop of edges)."""


def set_values(mapping: Mapping[str, Any], state: dict[str, Any]) -> set[str]:
    for alias, source in mapping.items():
        if isinstance(source, str) and source in state:
            state[alias] = state[source]
        else:
            state[alias] = yaml_text(source)
    return set(mapping)


def _matches(condition_value: str | list[str], actual: Any) -> bool:
    seen = "" if actual is None else str(yaml_text(actual)).strip().lower()
    wanted = condition_value if isinstance(condition_value, list) else [condition_value]
    return any(seen == str(w).strip().lower() for w in wanted)


def route(node: Node, state: dict[str, Any], fired: set[str]) -> str | None:
    """The name of the next node (``END``), or None for "the next one in order"."""
    for condition in node.conditions:
        if _matches(condition.value, state.get(condition.state)):
            fired |= set_values(condition.output, state)
            return condition.node
    if node.edge is not None:
        set_values(node.edge.output, state)
        return node.edge.node
    set_values(node.output, state)
    return None


def initial_state(item: Item, results: Mapping[str, ScoreResult]) -> dict[str, Any]:
    return {
        "text": item.text,
        "metadata": dict(item.metadata),
        "results": {name: {"value": r.value, "explanation": r.explanation} for name, r in results.items()},
        **dict.fromkeys(NODE_FIELDS),
    }


async def walk(score: Score, state: dict[str, Any], ctx: NodeContext, path: list[str]) -> None:
    nodes = score.graph or []
    position = {node.name: index for index, node in enumerate(nodes)}
    fired: set[str] = set()
    index: int | None = 0
    while index is not None and index < len(nodes):
        node = nodes[index]
        path.append(node.name)
        if path.count(node.name) > MAX_VISITS_PER_NODE:
            raise GraphError(f"node {node.name!r} ran more than {MAX_VISITS_PER_NODE} times: its edges loop")
        set_values({alias: source for alias, source in node.input.items() if source in state}, state)
        fields = await run_node(ctx, node, state)
        state.update(fields)
        own = {name: fields.get(name) for name in NODE_FIELDS}
        own["value"] = fields.get("value", fields.get("classification"))
        state[node.name] = own
        target = route(node, state, fired)
        index = index + 1 if target is None else (None if target == END else position[target])
    set_values({k: v for k, v in score.output.items() if k not in fired}, state)


def result_of(score: Score, state: Mapping[str, Any], path: list[str]) -> ScoreResult:
    value = state.get("value")
    if value is None:
        value = state.get("classification")
    explanation = state.get("explanation")
    confidence = state.get("confidence")
    return ScoreResult(
        score.name,
        "No" if value is None else str(yaml_text(value)),
        None if explanation is None else str(explanation),
        confidence if isinstance(confidence, int | float) else None,
        tuple(path),
        state=dict(state),
    )


async def run_score(
    score: Score, item: Item, ctx: NodeContext, results: Mapping[str, ScoreResult], *, timeout_s: float = 120.0
) -> ScoreResult:
    """Run ``score`` on ``item``; never raises for a failing node (the result is ``ERROR`` with the reason)."""
    state = initial_state(item, results)
    ctx = ctx.for_score(score.name)
    path: list[str] = []
    try:
        async with asyncio.timeout(timeout_s):
            await walk(score, state, ctx, path)
    except TimeoutError:
        error = f"timed out after {timeout_s:g} s" + (f" in node {path[-1]!r}" if path else "")
        return ScoreResult(score.name, ERROR, error, None, tuple(path), error, "error")
    except Exception as exc:  # any node failure fails this score on this item, never the run
        where = f"node {path[-1]!r}: " if path else ""
        plain = isinstance(exc, DriftError | TemplateProblem)  # their messages already say what failed
        error = f"{where}{exc}" if plain else f"{where}{type(exc).__name__}: {exc}"
        return ScoreResult(score.name, ERROR, error, None, tuple(path), error, "error")
    return result_of(score, state, path)
