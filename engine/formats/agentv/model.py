"""The AgentV eval case as drift reads it, whatever dialect the file was written in.

Two dialects map onto one model (see ``docs/formats/agentv.md``):

* **seed-era** (seed 004, upstream 2026-01): ``evalcases`` (or ``eval_cases``), ``expected_outcome`` (alias
  ``outcome``), ``input_messages`` (alias ``input``), ``expected_messages`` (alias ``expected_output``),
  ``evaluators`` / ``execution.evaluators`` with underscore types and ``script`` for code judges;
* **4.x** (the ``agentv`` 4.x CLI): ``tests``, ``criteria``, ``input``, ``expected_output``, ``assertions`` with
  hyphenated types and ``command`` for code graders.

Evaluator types are kept in one canonical (underscore) spelling: :data:`EVALUATOR_TYPES`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Dialect = Literal["seed", "4.x"]

#: 4.x deterministic assertions on the final answer (:mod:`engine.formats.agentv.assertions` runs them)
STRING_ASSERTIONS: tuple[str, ...] = (
    "contains",
    "contains_any",
    "contains_all",
    "icontains",
    "icontains_any",
    "icontains_all",
    "starts_with",
    "ends_with",
    "equals",
    "regex",
    "is_json",
)

#: canonical evaluator types drift runs
EVALUATOR_TYPES: tuple[str, ...] = (
    "llm_judge",
    "rubric",
    "tool_trajectory",
    "code_judge",
    "field_accuracy",
    "latency",
    "cost",
    "token_usage",
    "composite",
    *STRING_ASSERTIONS,
)

#: every accepted spelling (after lower-casing and ``_`` → ``-``) → its canonical type
TYPE_ALIASES: dict[str, str] = {
    "llm-judge": "llm_judge",
    "llm-grader": "llm_judge",
    "rubric": "rubric",
    "rubrics": "rubric",
    "tool-trajectory": "tool_trajectory",
    "code-judge": "code_judge",
    "code-grader": "code_judge",
    "code": "code_judge",
    "field-accuracy": "field_accuracy",
    "latency": "latency",
    "cost": "cost",
    "token-usage": "token_usage",
    "composite": "composite",
    **{name.replace("_", "-"): name for name in ("contains", "contains_any", "contains_all", "icontains")},
    **{name.replace("_", "-"): name for name in ("icontains_any", "icontains_all", "starts_with", "ends_with")},
    **{name.replace("_", "-"): name for name in ("equals", "regex", "is_json")},
}

TRAJECTORY_MODES: tuple[str, ...] = ("any_order", "in_order", "exact")
#: 4.x adds two modes: every expected call somewhere (superset) / every actual call allowed (subset)
TRAJECTORY_MODES_4X: tuple[str, ...] = (*TRAJECTORY_MODES, "superset", "subset")
#: how expected ``args`` match a call's input: seed era compares the named keys (superset); 4.x defaults to
#: exact equality; ``ignore`` skips; a list of dotted field paths compares those fields only
ARGS_MATCH_MODES: tuple[str, ...] = ("exact", "superset", "subset", "ignore")
ArgsMatch = str | tuple[str, ...]


def canonical_type(raw: str) -> str | None:
    """The canonical evaluator type of ``raw`` (``code-grader`` → ``code_judge``), or None when unknown."""
    return TYPE_ALIASES.get(raw.strip().lower().replace("_", "-"))


@dataclass(frozen=True, slots=True)
class Rubric:
    id: str
    description: str
    weight: float = 1.0
    required: bool = True


@dataclass(frozen=True, slots=True)
class ExpectedTool:
    tool: str
    #: None: not checked; "any": not checked (explicitly); a mapping: compared as ``args_match`` says
    args: Mapping[str, Any] | Literal["any"] | None = None
    args_match: ArgsMatch = "superset"


@dataclass(frozen=True, slots=True)
class EvaluatorSpec:
    """One evaluator of a case: its name, canonical type, weight and type-specific settings."""

    name: str
    type: str
    weight: float = 1.0
    #: the evaluator's mapping as written (type-specific keys: prompt, script, mode, fields, threshold…)
    config: Mapping[str, Any] = field(default_factory=dict)
    rubrics: tuple[Rubric, ...] = ()
    expected: tuple[ExpectedTool, ...] = ()
    minimums: Mapping[str, int] = field(default_factory=dict)
    #: code judge argv (``script`` / ``command``), already split
    argv: tuple[str, ...] = ()
    children: tuple[EvaluatorSpec, ...] = ()
    line: int = 1
    #: 4.x ``negate: true``: the score becomes 1 − score and hits and misses swap
    negate: bool = False
    #: 4.x ``required`` / ``min_score``: below this score the whole case scores 0
    required_min: float | None = None

    @property
    def mode(self) -> str:
        return str(self.config.get("mode", "any_order"))


@dataclass(frozen=True, slots=True)
class EvalCase:
    id: str
    expected_outcome: str
    input_messages: tuple[Mapping[str, Any], ...]
    expected_messages: tuple[Mapping[str, Any], ...] = ()
    evaluators: tuple[EvaluatorSpec, ...] = ()
    source: Path = Path(".")
    line: int = 1
    dialect: Dialect = "seed"
    dataset: str = ""
    conversation_id: str | None = None
    #: the case's own ``execution.target``, overriding the file's (None: the file's, or ``--target``)
    target: str | None = None

    @property
    def question(self) -> str:
        """The last user message's text (the prompt a single-turn target answers)."""
        users = [m for m in self.input_messages if m.get("role", "user") == "user"]
        return content_text(users[-1].get("content")) if users else ""

    @property
    def reference_answer(self) -> str:
        """The last expected message's content, as text."""
        return content_text(self.expected_messages[-1].get("content")) if self.expected_messages else ""

    @property
    def reference_value(self) -> Any:
        """The last expected message's content as written (an object for structured outputs)."""
        return self.expected_messages[-1].get("content") if self.expected_messages else None


@dataclass(frozen=True, slots=True)
class EvalFile:
    path: Path
    dialect: Dialect
    cases: tuple[EvalCase, ...]
    #: ``execution.target`` (seed) or ``target`` (4.x): the AgentV target the file names, if any
    target: str | None = None
    description: str = ""
    #: the sidecar YAML a ``.jsonl`` dataset took its defaults from, if any
    sidecar: Path | None = None


def content_text(content: Any) -> str:
    """Message content as text: strings as they are, content blocks joined, objects as compact JSON."""
    import orjson

    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, Mapping) and isinstance(block.get("value", block.get("text")), str):
                parts.append(str(block.get("value", block.get("text"))))
            else:
                parts.append(content_text(block))
        return "\n".join(parts)
    return orjson.dumps(content, default=str, option=orjson.OPT_SORT_KEYS).decode()
