"""The shape of a Plexus score / scorecard file, as pydantic models (the JSON Schema is generated from them).

Plexus files carry many keys this runner does not use (ids, versions, data-source settings, batching flags);
they are kept (``extra="allow"``) so real files load, and only the keys that change behaviour are typed.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from engine.propositions.yamlsource import Text, Texts

#: Node classes this runner implements (the names used in Plexus files).
CLASSIFIER_CLASSES = ("Classifier", "YesOrNoClassifier", "MultiClassClassifier")
NODE_CLASSES = (*CLASSIFIER_CLASSES, "Extractor", "BeforeAfterSlicer", "LogicalClassifier", "LogicalNode")
#: Score classes that run a graph.
GRAPH_SCORE_CLASSES = ("LangGraphScore",)
END = "END"

Operator = Literal["==", "!=", "in", "not in"]
ScoreType = Literal["binary", "categorical", "numeric", "percentage", "boolean"]


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class _Closed(BaseModel):
    """Top-level mappings: unknown keys are errors (with a did-you-mean), upstream-only keys are listed."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class _UpstreamScoreKeys(_Closed):
    """Keys Plexus scores carry that drift accepts and does not use (ids, versions, data sources, tuning)."""

    version: Any = None
    parent: Any = None
    externalId: Any = None  # the upstream spelling
    external_id: Any = None
    tags: Any = None
    config: Any = None
    data: Any = None
    item: Any = None
    nodes: Any = None
    label_field: Any = None
    label_score_name: Any = None
    number_of_classes: Any = None
    disable_batching: Any = None
    batch: Any = None
    max_tokens: Any = None
    timeout: Any = None
    reasoning_effort: Any = None
    verbosity: Any = None
    base_model_name: Any = None
    model_region: Any = None


class Condition(_Open):
    """Route on a state field (default ``classification``): on a match set ``output`` and go to ``node``."""

    state: str = "classification"
    value: Text | Texts
    node: str | None = None
    output: dict[str, Any] = Field(default_factory=dict)


class Edge(_Open):
    """The fallback route out of a node, with output aliasing."""

    node: str
    output: dict[str, Any] = Field(default_factory=dict)


class Node(_Open):
    name: str = Field(min_length=1)
    node_class: str = Field(alias="class")
    system_message: str = ""
    user_message: str = ""
    valid_classes: Texts | None = None
    parse_from_start: bool = False
    maximum_retry_count: int = Field(default=6, ge=0, le=20)
    enable_confidence: bool = False
    confidence: bool = False
    trust_model_output: bool = False
    code: str | None = None
    function_name: str | None = None
    parameters: dict[str, Any] = Field(default_factory=dict)
    input: dict[str, str] = Field(default_factory=dict)
    output: dict[str, Any] = Field(default_factory=dict)
    conditions: list[Condition] = Field(default_factory=list)
    edge: Edge | None = None
    model_provider: str | None = None
    model_name: str | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)


class DependencyCondition(_Open):
    operator: Operator = "=="
    value: Text | Texts


Dependencies = list[str] | dict[str, DependencyCondition | Text]


class Score(_UpstreamScoreKeys):
    """One score: a graph of nodes (``class: LangGraphScore``), its model and its dependencies."""

    name: str = Field(min_length=1)
    key: str | None = None
    id: str | int | None = None
    score_class: str | None = Field(default=None, alias="class")
    description: str | None = None
    type: ScoreType | None = None
    model_provider: str | None = None
    model_name: str | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    graph: list[Node] | None = None
    output: dict[str, Any] = Field(default_factory=dict)
    depends_on: Dependencies | None = None


class Section(_Closed):
    name: str | None = None
    id: Any = None
    key: Any = None
    description: str | None = None
    scores: list[Score] = Field(default_factory=list)


class Scorecard(_Closed):
    """A collection of scores (``scores:``, or the legacy ``sections: [{scores: …}]``)."""

    name: str = Field(min_length=1)
    key: str | None = None
    id: str | int | None = None
    description: str | None = None
    scores: list[Score] = Field(default_factory=list)
    sections: list[Section] = Field(default_factory=list)
    externalId: Any = None  # the upstream spelling
    external_id: Any = None
    version: Any = None
    tags: Any = None

    def all_scores(self) -> list[Score]:
        return [*self.scores, *(score for section in self.sections for score in section.scores)]
