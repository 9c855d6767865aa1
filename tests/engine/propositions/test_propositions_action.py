"""Action-level claims: the gate judges a proposition file's ``action`` section, evaluation its ``propositions``."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.errors import PropositionFileError
from engine.library import PropositionLibrary
from engine.models import GATE_DIMENSIONS, Dimension
from engine.proposition_tree import check_tree
from engine.propositions import load_set
from engine.propositions.templates import unknown_placeholders
from engine.settings import BUNDLED_PROPOSITIONS
from tests.conftest import Write

DEFAULT = """\
dimension: fluency
include_personas: false
propositions:
  - id: fluency-overall
    claim: "{{agent_name}} writes varied messages"
action:
  - id: fluency-next
    claim: "The next message, {{action}}, is fluent"
"""
AGENT = """\
dimension: fluency
propositions:
  - id: pam-overall
    claim: "{{agent_name}} writes gently"
action:
  - id: pam-next
    claim: "The next message, {{action}}, is gentle"
"""


def test_the_gate_set_holds_the_action_sections_and_evaluation_the_rest(tmp_path: Path, write: Write) -> None:
    write("fluency/_default.yaml", DEFAULT)
    write("fluency/pam.yaml", AGENT)
    gate = load_set(tmp_path, Dimension.FLUENCY, "pam", action=True)
    evaluation = load_set(tmp_path, Dimension.FLUENCY, "pam")
    assert [p.id for p in gate.propositions] == ["fluency-next", "pam-next"]
    assert [p.id for p in evaluation.propositions] == ["fluency-overall", "pam-overall"]
    assert gate.include_personas is False  # the file's settings apply to both sections


def test_a_tree_without_action_sections_gates_on_its_propositions(tmp_path: Path, write: Write) -> None:
    write("fluency/_default.yaml", DEFAULT.split("action:", maxsplit=1)[0])
    assert [p.id for p in load_set(tmp_path, Dimension.FLUENCY, None, action=True).propositions] == ["fluency-overall"]


def test_the_same_id_may_appear_once_per_section_but_not_twice_in_one(tmp_path: Path, write: Write) -> None:
    write("fluency/_default.yaml", DEFAULT.replace("fluency-next", "fluency-overall"))
    assert len(load_set(tmp_path, Dimension.FLUENCY, None, action=True).propositions) == 1
    path = write("fluency/pam.yaml", AGENT.replace("pam-next", "fluency-overall"))
    with pytest.raises(PropositionFileError) as caught:
        load_set(tmp_path, Dimension.FLUENCY, "pam", action=True)
    (issue,) = caught.value.issues
    assert issue.file == str(path) and issue.line == 6 and "duplicate proposition id 'fluency-overall'" in str(issue)
    assert any("duplicate" in str(i) for i in check_tree(tmp_path).issues)


def test_an_invalid_action_claim_is_reported_at_its_line(tmp_path: Path, write: Write) -> None:
    path = write("fluency/_default.yaml", DEFAULT + "  - id: broken\n    claim: '  '\n")
    issues = check_tree(tmp_path).issues
    assert [(i.file, i.line) for i in issues] == [(str(path), 10)]
    assert "action.1.claim" in str(issues[0])


@pytest.mark.parametrize("dimension", GATE_DIMENSIONS)
def test_every_bundled_gate_dimension_has_action_claims_about_the_next_action(dimension: Dimension) -> None:
    library = PropositionLibrary(BUNDLED_PROPOSITIONS)
    for agent in (None, "michael", "jim"):
        gate, evaluation = library.pset(agent, dimension, action=True), library.pset(agent, dimension)
        assert gate.propositions and not {p.id for p in gate.propositions} & {p.id for p in evaluation.propositions}
        for p in gate.propositions:
            assert "{{action}}" in p.claim, p.id  # about the draft, read in the light of the trajectory
            assert p.recommendations_for_improvement and unknown_placeholders(p.claim) == (), p.id
