"""The published JSON Schema of an AgentV eval file (both dialects). The loader is the authority on meaning;
this model documents the shape for editors (``schemas/agentv-eval.schema.json``)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class AgentVMessage(_Open):
    role: str = Field(description="system | user | assistant | tool")
    content: Any = Field(None, description="a string, content blocks, or an object (structured outputs)")
    tool_calls: list[dict[str, Any]] | None = Field(None, description="[{tool, input?, output?}]")


class AgentVRubric(_Open):
    id: str | None = None
    description: str | None = None
    outcome: str | None = Field(None, description="4.x spelling of description")
    weight: float = Field(1.0, ge=0)
    required: bool = True


class AgentVEvaluator(_Open):
    name: str | None = None
    type: str = Field(
        description="llm_judge | rubric | tool_trajectory | code_judge | field_accuracy | latency | cost | "
        "token_usage | composite | contains | contains_any | contains_all | icontains | icontains_any | "
        "icontains_all | starts_with | ends_with | equals | regex | is_json (4.x: hyphenated, e.g. code-grader, "
        "llm-grader, tool-trajectory, rubrics)"
    )
    weight: float = Field(1.0, ge=0, description="finite, >= 0; 0 excludes the evaluator from the case score")
    script: list[str] | str | None = Field(None, description="code_judge argv (seed era)")
    command: list[str] | str | None = Field(None, description="code-grader argv (4.x)")
    mode: str | None = Field(None, description="tool_trajectory: any_order | in_order | exact (4.x: superset, subset)")
    args_match: str | list[str] | None = Field(None, description="exact | superset | subset | ignore | [fields]")
    negate: bool | None = Field(None, description="4.x: score becomes 1 - score")
    required: bool | float | None = Field(None, description="4.x: below min_score (default 0.8) the case scores 0")
    min_score: float | None = None
    minimums: dict[str, int] | None = None
    expected: list[dict[str, Any]] | None = None
    rubrics: list[AgentVRubric | str] | None = None


class AgentVCase(_Open):
    id: str
    expected_outcome: str | None = Field(None, description="seed era (alias: outcome)")
    outcome: str | None = None
    criteria: str | None = Field(None, description="4.x")
    input_messages: list[AgentVMessage] | None = Field(None, description="seed era; wins over input")
    input: str | list[AgentVMessage] | None = None
    expected_messages: list[AgentVMessage] | None = Field(None, description="wins over expected_output")
    expected_output: Any = None
    evaluators: list[AgentVEvaluator] | None = None
    assertions: list[AgentVEvaluator] | None = Field(None, description="4.x")
    rubrics: list[AgentVRubric | str] | None = None
    execution: dict[str, Any] | None = Field(None, description="{evaluators: [...], target: NAME}")


class AgentVEvalFile(BaseModel):
    """An AgentV eval file: ``evalcases`` / ``eval_cases`` (seed era) or ``tests`` (4.x). The top level is
    closed (a misspelt key is flagged by editors); cases and evaluators stay open, as upstream reads them."""

    model_config = ConfigDict(extra="forbid")

    description: str | None = None
    dataset: str | None = None
    name: str | None = None
    target: str | None = Field(None, description="the AgentV target the file names (seed era; 4.x: execution)")
    evaluator: str | None = Field(None, description="seed era: the default evaluator type of every case")
    execution: dict[str, Any] | None = Field(None, description="{target, evaluators: [...]}")
    evaluators: list[AgentVEvaluator] | None = Field(None, description="file-level default evaluators")
    assertions: list[AgentVEvaluator] | None = Field(None, description="4.x suite-level default assertions")
    tags: list[str] | None = Field(None, description="4.x")
    metadata: dict[str, Any] | None = Field(None, description="4.x")
    evalcases: list[AgentVCase] | None = None
    eval_cases: list[AgentVCase] | None = None
    tests: list[AgentVCase] | None = None
