"""The bundled proposition set, personas and sample conversation are valid and follow seed doc 001."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import pytest

from engine.models import Dimension, EventKind, TargetType
from engine.personas import load_personas
from engine.proposition_tree import check_tree
from engine.propositions import list_agents, list_dimensions, load_set
from engine.propositions.templates import unknown_placeholders
from engine.settings import BUNDLED_PROPOSITIONS, REPO_ROOT

CAST = ("michael", "dwight", "jim", "pam", "angela")
CONVERSATION = REPO_ROOT / "ops" / "examples" / "office_conversation.jsonl"

# (include_personas, target_type) required per dimension by seed doc 001.
EXPECTED_SETTINGS = {
    Dimension.ADHERENCE: (True, TargetType.AGENT),
    Dimension.CONSISTENCY: (False, TargetType.AGENT),
    Dimension.FLUENCY: (False, TargetType.AGENT),
    Dimension.CONVERGENCE: (False, TargetType.ENVIRONMENT),
    Dimension.IDEAS_QUANTITY: (False, TargetType.ENVIRONMENT),
    Dimension.SUITABILITY: (True, TargetType.AGENT),
}


def test_bundled_tree_has_no_issues() -> None:
    report = check_tree(BUNDLED_PROPOSITIONS)
    assert report.issues == ()
    assert report.files >= 6 + 2 * len(CAST) and report.propositions > 40


@pytest.mark.parametrize("dimension", list(Dimension))
def test_every_dimension_has_defaults_with_the_seed_settings(dimension: Dimension) -> None:
    defaults = load_set(BUNDLED_PROPOSITIONS, dimension, None)
    assert (defaults.include_personas, defaults.target_type) == EXPECTED_SETTINGS[dimension]
    if dimension is Dimension.IDEAS_QUANTITY:
        assert len(defaults.propositions) == 1
        return
    assert 3 <= len(defaults.propositions) <= 6
    assert any(p.inverted for p in defaults.propositions)
    assert all(p.recommendations_for_improvement for p in defaults.propositions)


def test_consistency_is_only_judged_with_a_prior_action() -> None:
    consistency = load_set(BUNDLED_PROPOSITIONS, Dimension.CONSISTENCY, None)
    assert {p.precondition for p in consistency.propositions} == {"has_prior_actions"}


def test_claims_use_only_known_template_variables() -> None:
    for dimension in Dimension:
        for agent in (None, *list_agents(BUNDLED_PROPOSITIONS)):
            for p in load_set(BUNDLED_PROPOSITIONS, dimension, agent).propositions:
                assert unknown_placeholders(p.claim) == (), p.id
                assert unknown_placeholders(p.recommendations_for_improvement or "") == (), p.id


@pytest.mark.parametrize("agent", CAST)
def test_cast_has_character_propositions_and_a_persona(agent: str) -> None:
    merged = load_set(BUNDLED_PROPOSITIONS, Dimension.ADHERENCE, agent)
    own = [p for p in merged.propositions if p.id.startswith(f"{agent}-")]
    assert 3 <= len(own) <= 5
    assert all(p.recommendations_for_improvement for p in own)
    assert len({p.weight for p in own}) > 1
    persona = load_personas(BUNDLED_PROPOSITIONS)[agent]
    assert persona.name.lower().startswith(agent)
    assert persona.personality and persona.style and persona.beliefs and persona.behaviours and persona.skills


def test_some_character_file_is_hard_and_some_overrides_the_window() -> None:
    merged = [load_set(BUNDLED_PROPOSITIONS, Dimension.ADHERENCE, a) for a in CAST]
    assert any(m.hard for m in merged)
    assert any(m.first_n is not None and m.last_n is not None for m in merged)
    assert set(CAST) <= set(list_agents(BUNDLED_PROPOSITIONS))
    assert list_dimensions(BUNDLED_PROPOSITIONS) == tuple(Dimension)


def _conversation() -> list[dict[str, Any]]:
    return [json.loads(line) for line in CONVERSATION.read_text(encoding="utf-8").splitlines() if line]


def test_sample_conversation_is_well_formed() -> None:
    events = _conversation()
    assert 35 <= len(events) <= 50
    assert all(set(e) == {"agent_id", "agent_name", "channel", "kind", "text", "ts"} for e in events)
    assert {e["kind"] for e in events} == {k.value for k in EventKind}
    stamps = [datetime.fromisoformat(e["ts"].replace("Z", "+00:00")) for e in events]
    assert all(s.tzinfo is not None for s in stamps)
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
    assert sum(e["channel"] == "#general" for e in events) > len(events) - 5
    personas = load_personas(BUNDLED_PROPOSITIONS)
    for event in events:
        if event["kind"] == "action":
            assert personas[event["agent_id"]].name == event["agent_name"]


def test_sample_conversation_contains_the_planted_drift() -> None:
    events = _conversation()
    dwight = [e["text"] for e in events if e["agent_id"] == "dwight"]
    assert sum("As Assistant Regional Manager" in t for t in dwight) >= 4  # repetition
    agreeing = [e for e in events if "totally agree" in e["text"].lower()]
    assert len({e["agent_id"] for e in agreeing}) >= 6  # convergence on bland agreement
    michael = [e["text"] for e in events if e["agent_id"] == "michael"]
    assert any("synergies" in t and "stakeholder" in t for t in michael)  # corporate speak
