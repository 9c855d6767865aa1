"""The proposition file schema and the merged, ready-to-judge proposition set.

A :class:`PropositionFile` is one YAML file as written; a :class:`PropositionSet` is what the judge pipeline
uses for one (agent, dimension): the ``_default.yaml`` settings overridden by the settings the agent file sets
explicitly, with the agent's propositions appended to the default ones.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, Strict, field_validator

from engine.models import Dimension, TargetType
from engine.preconditions import precondition_names

#: Proposition and agent ids: a letter or digit, then letters, digits, ``_ - . :``.
ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}")

#: The two claim sections of a proposition file: trajectory-level (evaluation) and action-level (the gate).
TRAJECTORY_SECTION, ACTION_SECTION = "propositions", "action"

#: The file-level settings an agent file may override.
SETTING_FIELDS: tuple[str, ...] = ("include_personas", "hard", "target_type", "first_n", "last_n")

StrictText = Annotated[str, Strict()]
StrictFlag = Annotated[bool, Strict()]
WindowSize = Annotated[int | None, Strict(), Field(ge=0)]


@dataclass(frozen=True, slots=True)
class Window:
    """How much of a trajectory a judge sees: the first ``first_n`` events and the last ``last_n``; ``hopping``:
    every event since an anchor moving in steps of ``last_n`` instead (:mod:`engine.windows`)."""

    first_n: int
    last_n: int
    hopping: bool = False


#: Offline evaluation windows (seed doc 000).
EVALUATION_WINDOW_DEFAULTS = Window(first_n=10, last_n=100)
#: Action-level (gate) windows, narrower than evaluation ones.
ACTION_LEVEL_WINDOW_DEFAULTS = Window(first_n=5, last_n=10)


def suggestion(word: str, candidates: tuple[str, ...] | list[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest candidate, or an empty string."""
    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


def check_id(value: str, what: str) -> str:
    if not ID_PATTERN.fullmatch(value):
        raise ValueError(
            f"{what} {value!r} is not a valid id: use 1-128 letters, digits, '_', '-', '.' or ':', "
            "starting with a letter or digit"
        )
    return value


class Proposition(BaseModel):
    """One natural-language claim a judge scores 0-9 (or, for ideas_quantity, answers with a count)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: StrictText = Field(
        description="Unique id within the merged set for an (agent, dimension).",
        json_schema_extra={"pattern": f"^{ID_PATTERN.pattern}$"},
    )
    claim: StrictText = Field(
        description="The claim; may use {{agent_name}}, {{action}}, {{channel_name}}, {{recipient_name}}.",
        json_schema_extra={"minLength": 1},
    )
    weight: Annotated[float, Strict(), Field(ge=0, allow_inf_nan=False)] = Field(
        1.0, description="Relative weight in the weighted mean of the dimension score."
    )
    inverted: StrictFlag = Field(False, description="An anti-pattern: the judge's score is flipped to 9 - score.")
    recommendations_for_improvement: StrictText | None = Field(
        None, description="Guidance fed back to the agent when this proposition scores low."
    )
    double_check: StrictFlag = Field(False, description="Ask the judge to reconsider its first answer.")
    precondition: StrictText | None = Field(
        None, description="Name of a registered precondition; when it is false the proposition scores 9."
    )

    @field_validator("id")
    @classmethod
    def _valid_id(cls, value: str) -> str:
        return check_id(value, "proposition id")

    @field_validator("claim")
    @classmethod
    def _non_empty_claim(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the claim must not be empty")
        return value

    @field_validator("precondition")
    @classmethod
    def _known_precondition(cls, value: str | None) -> str | None:
        if value is None:
            return None
        known = precondition_names()
        if value not in known:
            hint = suggestion(value, known) or f" (known: {', '.join(known) or 'none'})"
            raise ValueError(f"unknown precondition '{value}'{hint}")
        return value


class PropositionFile(BaseModel):
    """One proposition YAML file: ``<dir>/<dimension>/_default.yaml`` or ``.../<agent_id>.yaml``."""

    model_config = ConfigDict(frozen=True, extra="forbid", title="persona-drift proposition file")

    dimension: Dimension = Field(description="The dimension these propositions measure; must equal the folder name.")
    agent_id: StrictText | None = Field(
        None,
        description="The agent this file is for; must equal the file name (or '_default' in _default.yaml).",
        json_schema_extra={"pattern": f"^(_default|{ID_PATTERN.pattern})$"},
    )
    include_personas: StrictFlag = Field(True, description="Give the judge the agent's persona spec.")
    hard: StrictFlag = Field(False, description="Multiply every score below 9 by 0.8.")
    target_type: TargetType = Field(
        TargetType.AGENT, description="'agent': one agent's messages; 'environment': the whole channel."
    )
    first_n: WindowSize = Field(None, description="Trajectory events kept from the start (unset: caller default).")
    last_n: WindowSize = Field(None, description="Trajectory events kept from the end (unset: caller default).")
    propositions: tuple[Proposition, ...] = Field(
        (), description="The claims of this file about the whole trajectory (offline evaluation)."
    )
    action: tuple[Proposition, ...] = Field(
        (),
        description="Action-level claims for the gate: about the next action (the draft, {{action}}), read in "
        "the light of the trajectory. A set none of whose files has an action section gates on 'propositions'.",
    )

    def section(self, name: str) -> tuple[Proposition, ...]:
        """The claims of one section: ``propositions`` or ``action``."""
        return self.action if name == ACTION_SECTION else self.propositions

    @field_validator("agent_id")
    @classmethod
    def _valid_agent_id(cls, value: str | None) -> str | None:
        if value is None or value == "_default":
            return value
        return check_id(value, "agent_id")


class PropositionSet(BaseModel):
    """The merged propositions and settings for one dimension and agent (``agent_id`` None: defaults only)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    dimension: Dimension
    agent_id: str | None = None
    include_personas: bool = True
    hard: bool = False
    target_type: TargetType = TargetType.AGENT
    first_n: int | None = None
    last_n: int | None = None
    propositions: tuple[Proposition, ...] = ()
    sources: tuple[str, ...] = ()

    def window(self, defaults: Window) -> Window:
        """The trajectory window: this set's first_n/last_n, with unset values taken from ``defaults``."""
        return Window(
            first_n=defaults.first_n if self.first_n is None else self.first_n,
            last_n=defaults.last_n if self.last_n is None else self.last_n,
            hopping=defaults.hopping,
        )

    @property
    def is_empty(self) -> bool:
        return not self.propositions

    def get(self, proposition_id: str) -> Proposition:
        """The proposition with ``proposition_id`` (KeyError when absent)."""
        for proposition in self.propositions:
            if proposition.id == proposition_id:
                return proposition
        raise KeyError(proposition_id)

    @property
    def total_weight(self) -> float:
        return sum(p.weight for p in self.propositions)
