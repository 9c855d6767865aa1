"""The samples an experiment report is computed from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

MetricKind = Literal["score", "count"]


@dataclass(frozen=True, slots=True)
class ArmSample:
    """One arm's values of one metric; ``clusters`` names the agent (or session) behind each value."""

    values: tuple[float, ...]
    clusters: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.clusters is not None and len(self.clusters) != len(self.values):
            raise ValueError("clusters must name one cluster per value")


@dataclass(frozen=True, slots=True)
class MetricData:
    metric: str
    control: ArmSample
    treatment: ArmSample
    kind: MetricKind = "score"
    label: str = ""

    @property
    def title(self) -> str:
        return self.label or self.metric.replace("_", " ")


@dataclass(frozen=True, slots=True)
class ExperimentData:
    name: str
    metrics: tuple[MetricData, ...]
    source: str = ""
    #: key of the paper's published values for this experiment (:data:`engine.experiments.paper.PAPER`)
    paper_key: str | None = None
    #: lines the report repeats under its table (what the run cost, how it was made)
    notes: tuple[str, ...] = ()
