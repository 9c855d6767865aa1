"""Shared value types: AgentConfig against seed doc 001, TokenUsage arithmetic, Persona rendering."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from engine.models import GATE_DIMENSIONS, ZERO_USAGE, AgentConfig, Dimension, Persona, TokenUsage

PersonaFactory = Callable[..., Persona]

#: The ``agent_evaluation_config`` columns of seed doc 001 and their defaults.
SEED_001_DEFAULTS: dict[str, Any] = {
    "gate_adherence_enabled": False,
    "gate_consistency_enabled": False,
    "gate_fluency_enabled": False,
    "gate_suitability_enabled": False,
    "gate_adherence_threshold": 7.0,
    "gate_consistency_threshold": 7.0,
    "gate_fluency_threshold": 7.0,
    "gate_suitability_threshold": 7.0,
    "gate_similarity_enabled": False,
    "max_action_similarity": 0.6,
    "max_correction_attempts": 2,
    "continue_on_failure": True,
    "minimum_required_qty_of_actions": 0,
    "anti_convergence_enabled": False,
    "convergence_threshold": 0.6,
    "variety_intervention_enabled": False,
    "variety_message_threshold": 7,
    "repetition_suppression_enabled": False,
    "repetition_threshold": 0.3,
}

MIGRATION = Path(__file__).resolve().parents[2] / "streams" / "store" / "migrations" / "001_initial.sql"
MONITOR_MIGRATION = MIGRATION.with_name("011_monitor.sql")
MONITOR_KEYS = {"monitor_enabled", "monitor_alpha", "monitor_min_shift", "monitor_reference"}
CANDIDATE_KEYS = {"propositions", "judge"}  # shadow gating's promote (issue 30): the agent's own tree and judge
_ADDED = re.compile(r"ADD COLUMN IF NOT EXISTS (\w+)\s+(boolean|double precision|text)\s+NOT NULL DEFAULT ([\w.']+)")
_COLUMN = re.compile(r"^\s*(\w+)\s+(boolean|real|integer)\s+NOT NULL DEFAULT ([\w.]+),?$")

usages = st.builds(TokenUsage, *(st.integers(0, 10**9) for _ in range(4)))


# --- AgentConfig ----------------------------------------------------------------------------------------


def test_defaults_match_seed_doc_001() -> None:
    config = AgentConfig()
    assert {name: getattr(config, name) for name in SEED_001_DEFAULTS} == SEED_001_DEFAULTS
    # beyond the seed: the master switch, on by default (every dimension is off anyway), and the drift monitor's
    # keys (issue 27; it only watches, beside the verdict path)
    assert set(AgentConfig.model_fields) - set(SEED_001_DEFAULTS) == {"gate_enabled", *MONITOR_KEYS, *CANDIDATE_KEYS}
    assert config.gate_enabled is True


def _sql_default(kind: str, raw: str) -> Any:
    if kind == "boolean":
        return raw == "true"
    return float(raw) if kind == "real" else int(raw)


def test_defaults_match_the_database_migration() -> None:
    table = MIGRATION.read_text(encoding="utf-8").split("CREATE TABLE IF NOT EXISTS agent_evaluation_config", 1)[1]
    columns: dict[str, Any] = {}
    for line in table.split(");", 1)[0].splitlines():
        match = _COLUMN.match(line)
        if match:
            columns[match.group(1)] = _sql_default(match.group(2), match.group(3))
    for match in _ADDED.finditer(MONITOR_MIGRATION.read_text(encoding="utf-8")):
        kind, raw = match.group(2), match.group(3)
        columns[match.group(1)] = (
            raw.strip("'") if kind == "text" else _sql_default("real" if kind == "double precision" else kind, raw)
        )
    candidates = MIGRATION.with_name("013_agent_candidates.sql").read_text(encoding="utf-8")  # nullable text: None
    columns.update({name: None for name in re.findall(r"ADD COLUMN IF NOT EXISTS (\w+)\s+text\b", candidates)})
    assert columns == AgentConfig().model_dump()


def test_every_runtime_correction_is_off_by_default() -> None:
    config = AgentConfig()
    assert config.enabled_gate_dimensions() == ()
    assert not config.needs_judge
    assert not any(
        getattr(config, name)
        for name in AgentConfig.model_fields
        if name.endswith("_enabled") and name not in {"gate_enabled", "monitor_enabled"}  # the monitor only watches
    )


def test_with_changes_returns_a_validated_copy() -> None:
    base = AgentConfig()
    changed = base.with_changes({"gate_fluency_enabled": True, "gate_fluency_threshold": 5})
    assert changed.gate_fluency_enabled and changed.gate_fluency_threshold == 5.0
    assert not base.gate_fluency_enabled  # the original is untouched
    assert changed.enabled_gate_dimensions() == (Dimension.FLUENCY,)


@pytest.mark.parametrize(
    "changes",
    [
        {"gate_adherence_threshold": 9.5},
        {"gate_fluency_threshold": -1},
        {"max_action_similarity": 1.5},
        {"repetition_threshold": -0.1},
        {"max_correction_attempts": -1},
        {"max_correction_attempts": "two"},
        {"minimum_required_qty_of_actions": -3},
        {"gate_adherence_enabled": "perhaps"},
        {"no_such_setting": True},
    ],
)
def test_with_changes_rejects_bad_values(changes: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        AgentConfig().with_changes(changes)


def test_configs_are_frozen() -> None:
    with pytest.raises(ValidationError):
        AgentConfig().gate_enabled = False  # type: ignore[misc]


@given(st.sets(st.sampled_from(GATE_DIMENSIONS)), st.booleans(), st.booleans())
def test_enabled_dimensions_and_needs_judge(enabled: set[Dimension], master: bool, similarity: bool) -> None:
    fields = {f"gate_{d.value}_enabled": True for d in enabled}
    config = AgentConfig(gate_enabled=master, gate_similarity_enabled=similarity, **fields)
    assert config.enabled_gate_dimensions() == tuple(d for d in GATE_DIMENSIONS if d in enabled)
    # similarity is algorithmic: it never needs a judge
    assert config.needs_judge == (master and bool(enabled))


def test_thresholds_are_per_dimension() -> None:
    config = AgentConfig(gate_adherence_threshold=5, gate_suitability_threshold=8.5)
    assert config.threshold(Dimension.ADHERENCE) == 5.0
    assert config.threshold(Dimension.SUITABILITY) == 8.5
    assert config.threshold(Dimension.FLUENCY) == 7.0


def test_offline_dimensions_are_never_gate_dimensions() -> None:
    config = AgentConfig(**{f"gate_{d.value}_enabled": True for d in GATE_DIMENSIONS})
    assert not config.dimension_enabled(Dimension.IDEAS_QUANTITY)
    assert not config.dimension_enabled(Dimension.CONVERGENCE)
    assert config.enabled_gate_dimensions() == GATE_DIMENSIONS


# --- TokenUsage -----------------------------------------------------------------------------------------


@given(usages, usages)
def test_usage_adds_field_by_field(a: TokenUsage, b: TokenUsage) -> None:
    total = (a + b).as_dict()
    assert total == {key: a.as_dict()[key] + b.as_dict()[key] for key in total}
    assert a + b == b + a


@given(usages, usages, usages)
def test_usage_addition_is_associative_with_zero_as_identity(a: TokenUsage, b: TokenUsage, c: TokenUsage) -> None:
    assert (a + b) + c == a + (b + c)
    assert a + ZERO_USAGE == a == ZERO_USAGE + a
    assert sum((a, b, c), ZERO_USAGE) == a + b + c


def test_usage_as_dict_names_every_counter() -> None:
    usage = TokenUsage(input_tokens=10, output_tokens=2, cache_read_input_tokens=7, cache_creation_input_tokens=1)
    assert usage.as_dict() == {
        "input_tokens": 10,
        "output_tokens": 2,
        "cache_read_input_tokens": 7,
        "cache_creation_input_tokens": 1,
    }


# --- Persona --------------------------------------------------------------------------------------------


@pytest.fixture
def make_persona() -> PersonaFactory:
    """make_persona(**fields): Dwight with only a name unless told otherwise."""

    def make(**fields: Any) -> Persona:
        return Persona(**{"id": "dwight", "name": "Dwight Schrute", **fields})

    return make


def test_a_bare_persona_renders_its_name_only(make_persona: PersonaFactory) -> None:
    assert make_persona().render() == "Name: Dwight Schrute"


def test_a_full_persona_renders_every_section_in_order(make_persona: PersonaFactory) -> None:
    persona = make_persona(
        personality="Intense.",
        style="Curt.",
        beliefs=("Beets matter.",),
        behaviours=("Guards the office.", "Quotes rules."),
        skills=("Karate",),
    )
    lines = persona.render().splitlines()
    assert lines[:3] == ["Name: Dwight Schrute", "Personality: Intense.", "Style: Curt."]
    assert lines[3:] == [
        "Beliefs:",
        "- Beets matter.",
        "Behaviours:",
        "- Guards the office.",
        "- Quotes rules.",
        "Skills:",
        "- Karate",
    ]


def test_empty_sections_are_left_out(make_persona: PersonaFactory) -> None:
    text = make_persona(skills=("Karate",)).render()
    assert "Beliefs" not in text and "Personality" not in text and "Skills:\n- Karate" in text


@pytest.mark.parametrize("fields", [{"name": ""}, {"id": ""}, {"age": -1}, {"hobbies": {1, 2}}])
def test_persona_validation(fields: dict[str, Any], make_persona: PersonaFactory) -> None:
    with pytest.raises(ValidationError):
        make_persona(**fields)


def test_free_form_persona_fields_are_kept_and_rendered(make_persona: PersonaFactory) -> None:
    persona = make_persona(hobbies=["paper"], routines={"morning": "beet farm"})
    assert persona.spec()["hobbies"] == ["paper"]
    assert "Hobbies:\n- paper" in persona.render() and "morning: beet farm" in persona.render()
