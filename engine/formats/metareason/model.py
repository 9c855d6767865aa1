"""The MetaReason prompt-family file (seed 002, upstream era ``v1-prompt-family``) as pydantic models.

One file is one *prompt family*: a Jinja2 ``prompt_template``, the axes its variables are sampled from
(``schema``, or ``axes`` as upstream's own tests spell it), how to sample them, and the oracles that score
each answer. Field-level rules (types, ranges, choices, unknown keys) live here; rules that relate several
fields (template variables present in the schema, ``stratified_by`` naming categorical axes, at least one
oracle, a registered custom oracle) are checked by :mod:`engine.formats.metareason.loader`, which can point
at the right line. The JSON Schema in ``schemas/metareason.schema.json`` is generated from
:class:`PromptFamily`.
"""

from __future__ import annotations

import math
from datetime import date
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

WEIGHT_TOLERANCE = 0.001
MIN_VARIANTS = 100
MAX_VARIANTS = 10_000
DEFAULT_VARIANTS = 1000
DEFAULT_SEED = 42


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


# -- axes ----------------------------------------------------------------------------------------------------


class CategoricalAxis(_Strict):
    """Values drawn by weight (uniform when ``weights`` is absent)."""

    type: Literal["categorical"]
    values: list[Any] = Field(min_length=1)
    weights: list[Annotated[float, Field(ge=0)]] | None = None

    @field_validator("weights")
    @classmethod
    def _weights(cls, weights: list[float] | None, info: ValidationInfo) -> list[float] | None:
        values = info.data.get("values")
        if weights is None or values is None:
            return weights
        if len(weights) != len(values):
            raise ValueError(f"weights has {len(weights)} entries but values has {len(values)}")
        total = math.fsum(weights)
        if abs(total - 1.0) > WEIGHT_TOLERANCE:
            raise ValueError(f"weights must sum to 1.0 (± {WEIGHT_TOLERANCE}), they sum to {total:g}")
        return weights

    def probabilities(self) -> list[float]:
        if self.weights is None:
            return [1.0 / len(self.values)] * len(self.values)
        total = math.fsum(self.weights)
        return [w / total for w in self.weights]


def _above_min(high: float, info: ValidationInfo) -> float:
    low = info.data.get("min")
    if low is not None and not low < high:
        raise ValueError(f"max must be greater than min (min {low:g}, max {high:g})")
    return high


class TruncatedNormalAxis(_Strict):
    """A normal distribution N(mu, sigma) cut to [min, max]."""

    type: Literal["truncated_normal"]
    mu: float
    sigma: float = Field(gt=0)
    min: float
    max: float

    _ordered = field_validator("max")(_above_min)


class UniformAxis(_Strict):
    type: Literal["uniform"]
    min: float
    max: float

    _ordered = field_validator("max")(_above_min)


class BetaAxis(_Strict):
    """A Beta(alpha, beta) distribution on [0, 1]."""

    type: Literal["beta"]
    alpha: float = Field(gt=0)
    beta: float = Field(gt=0)


Axis = Annotated[CategoricalAxis | TruncatedNormalAxis | UniformAxis | BetaAxis, Field(discriminator="type")]
ContinuousAxis = TruncatedNormalAxis | UniformAxis | BetaAxis


# -- sampling ------------------------------------------------------------------------------------------------


class Sampling(_Strict):
    method: Literal["latin_hypercube", "random", "sobol"] = "latin_hypercube"
    optimization_criterion: Literal["maximin", "correlation", "esi"] | None = None
    random_seed: int = DEFAULT_SEED
    stratified_by: list[str] = Field(default_factory=list)


# -- oracles -------------------------------------------------------------------------------------------------

Threshold = Annotated[float, Field(ge=0.0, le=1.0)]


class EmbeddingSimilarityOracle(_Strict):
    """Similarity of the answer to ``canonical_answer`` in an embedding space; passes at ``threshold``."""

    type: Literal["embedding_similarity"]
    canonical_answer: str = Field(min_length=1)
    method: Literal["cosine_similarity", "euclidean"] = "cosine_similarity"
    threshold: Threshold
    embedding_model: str = "text-embedding-3-small"


class LlmJudgeOracle(_Strict):
    """A rubric judged by our judge layer; ``threshold`` applies to the [0, 1] score (binary: 0 or 1)."""

    type: Literal["llm_judge"]
    rubric: str = Field(min_length=1)
    judge_model: str = "gpt-4"
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    output_format: Literal["binary", "score", "structured"] = "binary"
    threshold: Threshold = 0.5


class StatisticalCalibrationOracle(_Strict):
    """Observed success of the other oracles against ``expected_confidence`` ± ``tolerance``."""

    type: Literal["statistical_calibration"]
    expected_confidence: Threshold
    tolerance: Threshold = 0.1
    calibration_method: Literal["platt_scaling", "isotonic_regression"] | None = None
    min_samples: int = Field(default=1, ge=1)


class CustomOracle(_Strict):
    """An oracle the installation registered (entry point group ``persona_drift.metareason_oracles``).

    It is looked up by ``class`` (or ``class_name``); ``module`` is kept as documentation and never imported.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, allow_inf_nan=False)

    type: Literal["custom"]
    module: str | None = None
    class_: str | None = Field(default=None, alias="class", min_length=1)
    class_name: str | None = Field(default=None, min_length=1)
    config: dict[str, Any] = Field(default_factory=dict)
    threshold: Threshold = 0.5

    @model_validator(mode="after")
    def _one_name(self) -> CustomOracle:
        if (self.class_ is None) == (self.class_name is None):
            raise ValueError("a custom oracle needs exactly one of 'class' and 'class_name'")
        return self

    @property
    def registered_name(self) -> str:
        return self.class_name or self.class_ or ""


Oracle = Annotated[
    EmbeddingSimilarityOracle | LlmJudgeOracle | StatisticalCalibrationOracle | CustomOracle,
    Field(discriminator="type"),
]


# -- statistics and the rest ----------------------------------------------------------------------------------


class Prior(_Strict):
    alpha: float = Field(default=1.0, gt=0)
    beta: float = Field(default=1.0, gt=0)


class Inference(_Strict):
    """Accepted for compatibility; the conjugate posterior is computed exactly whatever ``method`` says."""

    method: Literal["mcmc", "exact", "analytical"] = "exact"
    samples: int | None = Field(default=None, ge=1)
    chains: int | None = Field(default=None, ge=1)
    warmup: int | None = Field(default=None, ge=0)
    target_accept: float | None = Field(default=None, gt=0, lt=1)


class StatisticsOutput(_Strict):
    credible_interval: float = Field(default=0.95, gt=0, lt=1)
    hdi_method: Literal["shortest", "central"] = "shortest"


class StatisticalConfig(_Strict):
    model: Literal["beta_binomial"] = "beta_binomial"
    prior: Prior = Field(default_factory=Prior)
    inference: Inference = Field(default_factory=Inference)
    output: StatisticsOutput = Field(default_factory=StatisticsOutput)


class PrimaryModel(BaseModel):
    """The model upstream would have called. Recorded with the run; the answering target is ``--target``."""

    model_config = ConfigDict(extra="allow", frozen=True)

    adapter: str | None = None
    model: str | None = None
    temperature: float | None = Field(default=None, ge=0)
    max_tokens: int | None = Field(default=None, ge=1)
    top_p: float | None = Field(default=None, gt=0, le=1)
    json_schema: str | None = None


class DomainContext(_Strict):
    industry: str | None = None
    regulatory_frameworks: list[str] = Field(default_factory=list)
    risk_category: Literal["minimal", "limited", "high", "unacceptable"] | None = None
    use_case: str | None = None
    data_sensitivity: Literal["public", "internal", "confidential", "pii"] | None = None


class Metadata(_Strict):
    version: str | None = None
    description: str | None = None
    created_by: str | None = None
    created_date: date | str | None = None
    last_modified: date | str | None = None
    review_cycle: Literal["monthly", "quarterly", "annual"] | None = None
    compliance_mappings: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    deprecation_date: date | str | None = None

    @field_validator("version", mode="before")
    @classmethod
    def _version_text(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int | float) else value


class PromptFamily(_Strict):
    """A MetaReason prompt family (seed 002). Exactly one of ``schema`` and ``axes`` holds the axes."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, populate_by_name=True, allow_inf_nan=False, title="MetaReason prompt family"
    )

    prompt_id: str = Field(min_length=1)
    prompt_template: str = Field(min_length=1)
    schema_: dict[str, Axis] | None = Field(default=None, alias="schema")
    axes: dict[str, Axis] | None = None
    sampling: Sampling = Field(default_factory=Sampling)
    n_variants: int = Field(default=DEFAULT_VARIANTS, ge=MIN_VARIANTS, le=MAX_VARIANTS)
    oracles: dict[str, Oracle]
    primary_model: PrimaryModel | None = None
    statistical_config: StatisticalConfig = Field(default_factory=StatisticalConfig)
    domain_context: DomainContext | None = None
    metadata: Metadata | None = None

    @property
    def axis_map(self) -> dict[str, CategoricalAxis | ContinuousAxis]:
        return dict(self.schema_ if self.schema_ is not None else (self.axes or {}))

    @property
    def axes_key(self) -> str:
        return "schema" if self.schema_ is not None else "axes"
