"""Scenario files: one experiment of TinyTroupe's Table 1 as YAML (see ``docs/simulations.md``).

A scenario names its population (fragments merged onto every persona, a shuffle seed), how agents are
grouped (``group_size`` × ``groups``), what they talk about (``themes``: brainstorming themes or debate
proposals), how often (``repetitions``), the steps of a session (introduction, mission), the facilitator's
prompts (jinja2, sandboxed, variables ``theme``, ``participants``), the rapporteur and the extraction of its
consolidation into a list, the agent order within a step, the two arms (per-agent
``agent_evaluation_config`` values and interventions) and how experiments score sessions (``evaluation``:
hard persona adherence, double-check). Sessions = groups × themes × repetitions per arm.
Files are read with :func:`engine.propositions.yamlsource.read_yaml`; every problem is ``FILE:LINE: field:
message``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import jinja2
from jinja2 import meta
from jinja2.sandbox import SandboxedEnvironment
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from engine.bundled import unknown_bundled
from engine.errors import FileIssue, PropositionFileError
from engine.formats.registry import FileKind, top_keys
from engine.models import AgentConfig
from engine.propositions.issues import validate_document
from engine.propositions.models import check_id
from engine.propositions.yamlsource import read_yaml
from engine.settings import bundled_simulations

BUNDLED_SCENARIOS = bundled_simulations() / "scenarios"
PROMPT_VARIABLES = frozenset({"theme", "participants", "items"})
_ENV = SandboxedEnvironment(undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=False)


def _check_template(text: str) -> str:
    try:
        unknown = meta.find_undeclared_variables(_ENV.parse(text)) - PROMPT_VARIABLES
    except jinja2.TemplateSyntaxError as exc:
        raise ValueError(f"template error: {exc.message}") from None
    if unknown:
        raise ValueError(f"unknown variable(s) {', '.join(sorted(unknown))}; use {', '.join(sorted(PROMPT_VARIABLES))}")
    return text


def render_prompt(text: str, **variables: Any) -> str:
    rendered: str = _ENV.from_string(text).render(**variables)
    return rendered.strip()


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Theme(_Strict):
    id: str
    text: str = Field(min_length=1)

    _id = field_validator("id")(lambda v: check_id(v, "theme id"))


class PopulationRef(_Strict):
    profile: str = Field("", description="The profile the population was generated from (informative)")
    fragments: tuple[str, ...] = Field(
        (), description="Fragments (from the population's fragments/) merged onto every persona"
    )
    shuffle_seed: int = 42
    agents: int | None = Field(None, ge=1, description="Use only the first N personas after the shuffle")


class StepCounts(_Strict):
    introduction: int = Field(1, ge=0)
    mission: int = Field(ge=1)


class Facilitator(_Strict):
    name: str = "Facilitator"
    introduction: str = Field(min_length=1)
    mission: str = Field(min_length=1)

    _templates = field_validator("introduction", "mission")(_check_template)


class Rapporteur(_Strict):
    position: int = Field(0, ge=0, description="Index of the rapporteur in its group (0: the first agent)")
    prompt: str = Field(min_length=1)

    _template = field_validator("prompt")(_check_template)


class Extraction(_Strict):
    items: Literal["ideas", "opinions"]
    fields: tuple[str, ...] = Field(min_length=1)
    prompt: str = Field(min_length=1)

    _template = field_validator("prompt")(_check_template)


class Interventions(_Strict):
    variety: bool = False
    variety_message_threshold: int = Field(7, ge=0)
    anti_convergence: bool = False
    convergence_threshold: float = Field(0.6, ge=0, le=9)
    repetition_suppression: bool = False
    repetition_threshold: float = Field(0.3, ge=0, le=1)


class Arm(_Strict):
    agent_evaluation_config: AgentConfig = Field(default_factory=AgentConfig)
    interventions: Interventions = Field(default_factory=Interventions)

    def config(self) -> AgentConfig:
        """The configuration every agent of this arm gets: the gate values with the interventions switched on."""
        i = self.interventions
        return self.agent_evaluation_config.with_changes({
            "variety_intervention_enabled": i.variety, "variety_message_threshold": i.variety_message_threshold,
            "anti_convergence_enabled": i.anti_convergence, "convergence_threshold": i.convergence_threshold,
            "repetition_suppression_enabled": i.repetition_suppression, "repetition_threshold": i.repetition_threshold,
        })  # fmt: skip


class EvaluationSpec(_Strict):
    """How an experiment scores the sessions (``drift experiment run``), as TinyTroupe's Table 1 did."""

    hard_adherence: bool = Field(True, description="Persona adherence in its hard variant (flaws cost 20%)")
    double_check: bool = Field(True, description="Ask the judge to reconsider every first answer")


class Arms(_Strict):
    treatment: Arm
    control: Arm


class Scenario(_Strict):
    name: str
    kind: Literal["brainstorming", "debate"]
    description: str = ""
    population: PopulationRef = Field(default_factory=PopulationRef)
    group_size: int = Field(ge=1, le=50)
    groups: int = Field(ge=1)
    repetitions: int = Field(1, ge=1)
    agent_order: Literal["parallel", "sequential_random"] = "parallel"
    channel: str = Field("room", min_length=1)
    themes: tuple[Theme, ...] = Field(min_length=1)
    steps: StepCounts
    facilitator: Facilitator
    rapporteur: Rapporteur
    extraction: Extraction
    arms: Arms
    evaluation: EvaluationSpec = Field(default_factory=EvaluationSpec)

    _name = field_validator("name")(lambda v: check_id(v, "scenario name"))

    @model_validator(mode="after")
    def _coherent(self) -> Scenario:
        if self.rapporteur.position >= self.group_size:
            raise ValueError(f"rapporteur.position {self.rapporteur.position} is outside a group of {self.group_size}")
        ids = [t.id for t in self.themes]
        if len(set(ids)) != len(ids):
            raise ValueError(f"theme ids repeat: {', '.join(sorted({i for i in ids if ids.count(i) > 1}))}")
        return self

    @property
    def sessions_per_arm(self) -> int:
        return self.groups * len(self.themes) * self.repetitions


def read_scenario_file(path: Path) -> tuple[Scenario | None, list[FileIssue]]:
    scenario, issues = validate_document(read_yaml(path), Scenario, "scenario file")
    return (scenario if not issues else None), issues


def load_scenario(name_or_path: str) -> Scenario:
    """A bundled scenario by name, or a scenario file."""
    path = Path(name_or_path).expanduser()
    if not path.suffix and not path.exists():
        path = BUNDLED_SCENARIOS / f"{name_or_path}.yaml"
        if not path.is_file():
            raise unknown_bundled("scenario", name_or_path, BUNDLED_SCENARIOS)
    scenario, issues = read_scenario_file(path)
    if scenario is None:
        raise PropositionFileError(issues or [FileIssue(str(path), 1, "", "unreadable scenario")])
    return scenario


KIND = FileKind(
    "scenario",
    "a simulation scenario (seed 001)",
    lambda d: {"name", "kind", "arms"} <= top_keys(d),
    lambda path: read_scenario_file(path)[1],
)
